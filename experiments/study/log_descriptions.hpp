#pragma once
// What every attribute and dataset of a study log means, and its unit, stored in the log
// itself (schema: docs/experiments.md). A dataset carries the attributes `description` and
// `unit`; an attribute cannot carry attributes, so the attributes of each kind of group are
// described once under /descriptions/<kind>: attribute NAME there holds the description and
// NAME.unit the unit ("" for text, counts without unit and flags).

#include <string>
#include <vector>

#include "io/hdf5.hpp"

namespace sinkgrad::study {

struct FieldDescription {
  std::string name;  // "option.*" stands for every option.<name>
  std::string unit;
  std::string description;
};

struct GroupDescription {
  std::string kind;   // the group under /descriptions
  std::string where;  // which groups of the log it describes, e.g. "/runs/run_*"
  std::vector<FieldDescription> attributes;
};

// The attributes of each kind of group, in the order the log writes them.
const std::vector<GroupDescription>& attribute_descriptions();
// The datasets, by name (the same name means the same thing wherever it appears).
const std::vector<FieldDescription>& dataset_descriptions();

// Writes (or completes) /descriptions.
void write_descriptions(const h5::File& file);
// Adds `description` and `unit` to a dataset the log just wrote, found by its name; a name
// missing from dataset_descriptions() is a programming error (sinkgrad::Error).
const h5::Dataset& described(const h5::Dataset& dataset);

}  // namespace sinkgrad::study
