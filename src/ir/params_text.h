// Text form of the typed parameter structs of params.h: `[name=value, ...]` in struct field order.
// Each struct lists its fields once (params_text.cpp, one small `fields` function per struct); the
// printer and the parser both go through that list, so a new struct needs only its own function.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/types.h"
#include "ir/params.h"

namespace ferry::ir {

// Reads one attribute value. The parser implements it so that errors carry text positions; each
// method throws ferry::Error(INVALID_ARGUMENT) on malformed text.
class ParamValueReader {
 public:
  virtual ~ParamValueReader() = default;
  virtual int64_t read_int() = 0;
  virtual std::vector<int64_t> read_int_list() = 0;  // [1,2] or []
  virtual double read_double() = 0;                  // 2.5, 1e-07, inf, -nan, -0 ...
  virtual DType read_dtype() = 0;
  virtual MemoryKind read_memory_kind() = 0;
  virtual bool read_bool() = 0;                      // true / false
};

// Field names of the struct that `p` holds, in print order (empty for NoParams).
std::vector<std::string_view> param_names(const Params& p);

// Reads field `name` of the struct that `p` holds from `r`. Returns false when that struct has no
// such field (nothing is read then).
bool read_param(Params& p, std::string_view name, ParamValueReader& r);

// "[shape=[2,3], broadcast_dimensions=[1]]", or "" when the struct has no fields.
std::string params_to_string(const Params& p);

// A double as the text form writes it: shortest text that reads back to the same bits
// ("2", "2.5", "1e-07", "inf", "-nan", "-0").
std::string double_to_string(double v);

}  // namespace ferry::ir
