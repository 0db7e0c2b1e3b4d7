// machine_info: a description of the machine a bench ran on (CPU, cores,
// memory, kernel, OS, THP mode, load, library versions), as JSON, so a
// number can be read with what produced it.
// Must never: fail a bench (an unreadable field is left out).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace ferry::bench {

nlohmann::json describe_machine();

/// The 1-minute load average now (0 when unreadable).
double load_average();

/// A memory field of process `pid` from /proc/<pid>/status ("VmRSS": now
/// resident, "VmHWM": its peak), in bytes; 0 when unreadable.
uint64_t process_memory_bytes(int pid, const std::string& which);

} // namespace ferry::bench
