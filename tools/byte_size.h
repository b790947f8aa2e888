// Byte counts as people write them on a command line: 1048576, 64MiB, 1.5GiB, 512KiB, 2MB.
#pragma once

#include <cstdint>
#include <string>

namespace ferry::tools {

// A non-negative number of bytes with an optional unit (B; KiB, MiB, GiB, TiB; KB, MB, GB, TB; case
// ignored); a fraction is rounded down to whole bytes. INVALID_ARGUMENT naming `what` for anything
// else (no number, an unknown unit, a negative value, or more than 2^63 - 1 bytes).
int64_t parse_byte_size(const std::string& text, const std::string& what);

// parse_byte_size of the environment variable `name` (its name in messages); 0 when it is not set.
int64_t byte_size_from_environment(const char* name);

}  // namespace ferry::tools
