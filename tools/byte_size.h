// Byte counts as people write them on a command line: 1048576, 64MiB, 1.5GiB, 512KiB, 2MB.
#pragma once

#include <cstdint>
#include <string>

namespace ferry::tools {

// A non-negative number of bytes with an optional unit (B; KiB, MiB, GiB, TiB; KB, MB, GB, TB; case
// ignored); a fraction is rounded down to whole bytes. INVALID_ARGUMENT naming `what` for anything
// else (no number, an unknown unit, a negative or too large value).
int64_t parse_byte_size(const std::string& text, const std::string& what);

}  // namespace ferry::tools
