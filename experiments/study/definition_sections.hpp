#pragma once
// The sections of a definition that take more than a value each: [inputs] logits (the
// distributions and files), [forward] convention x eps, [solvers] and the [solver.NAME]
// option lists. Used by parse_definition (definition.cpp).

#include <string>
#include <vector>

#include "core/solver_registry.hpp"
#include "experiments/study/definition.hpp"
#include "experiments/study/definition_reader.hpp"

namespace sinkgrad::study::definition_parsing {

// [forward] convention x eps: every convention with every eps listed, or with its own default.
void parse_forwards(const Reader& reader, StudyDefinition& definition);

// One item of [inputs] logits; a file's path is taken relative to base_directory.
LogitSource parse_logit_source(const Reader& reader, const std::string& key,
                               const std::string& item, const std::string& base_directory);

// [solvers] use and each listed solver's option lists with their product.
std::vector<SolverSweep> parse_solvers(const Reader& reader, const SolverRegistry& registry);

// true / 1 / yes or false / 0 / no.
bool parse_bool(const Reader& reader, const std::string& key);

}  // namespace sinkgrad::study::definition_parsing
