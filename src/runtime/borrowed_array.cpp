// borrow(): an Array over memory another library owns (ferry/borrow.h).
#include <fmt/format.h>

#include "ferry/borrow.h"
#include "ir/limits.h"
#include "ir/type.h"
#include "runtime/backend.h"
#include "runtime/storage.h"

namespace ferry {

Array borrow(void* data, DType dtype, Shape shape, std::shared_ptr<const void> owner) {
  ir::check_dtype(dtype, "borrow");
  ir::check_size(dtype, shape, "borrow");
  const size_t bytes = static_cast<size_t>(num_elements(shape)) * dtype_size(dtype);
  if (data == nullptr && bytes > 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("borrow: the data pointer is null for {}", type_string(dtype, shape)));
  if (dtype == DType::boolean)
    if (int64_t i = ir::first_non_bool(data, static_cast<int64_t>(bytes)); i >= 0)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("borrow: bool element {} is the byte {}; bools are 0 or 1", i,
                              static_cast<const unsigned char*>(data)[i]));
  auto* s = new detail::Storage;
  s->data = data;
  s->bytes = bytes;
  s->kind = MemoryKind::device;
  s->backend = &runtime::cpu_backend();  // a compiled program checks its arguments' backend
  // The bytes are the owner's: the Storage forgets its backend before it is destroyed, so nothing
  // is given back to the resource that never handed them out; then the owner is released.
  std::shared_ptr<detail::Storage> storage(s, [owner = std::move(owner)](detail::Storage* p) mutable {
    p->backend = nullptr;
    delete p;
    owner.reset();
  });
  return Array(std::move(storage), dtype, std::move(shape), MemoryKind::device);
}

}  // namespace ferry
