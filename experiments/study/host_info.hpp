#pragma once
// Where a study runs: the time, host and device names its log records, and the devices a
// study may use (a GPU counts only when a forward actually runs on it).

#include <string>
#include <vector>

#include "core/types.hpp"

namespace sinkgrad::study {

// The current time in UTC, "2026-01-31T12:00:00Z".
std::string utc_now();

// This machine's host name, or "unknown".
std::string host_name();

// "cpu: MODEL (N threads); cuda: GPU NAME" for the devices given.
std::string devices_text(const std::vector<Device>& devices);

// "cpu" / "cuda" / "default" -> devices; "default" is cuda when a GPU is usable, else cpu.
// Throws DefinitionError when cuda is asked for and no GPU is usable.
std::vector<Device> resolve_devices(const std::vector<std::string>& names);

}  // namespace sinkgrad::study
