#include "runtime/cpu/onednn_gemm.h"

#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "ferry/error.h"
#include "runtime/cpu/dot_path.h"

namespace ferry::runtime::cpu {

namespace {

// oneDNN's OpenMP team is one thread for every thread that reaches it (see the header): set once
// per thread, before its first oneDNN call (the primitive records the count it was made with).
void one_thread() {
  thread_local bool done = false;
  if (!done) {
    omp_set_num_threads(1);
    done = true;
  }
}

void check(dnnl_status_t s, const char* what) {
  if (s != dnnl_success) throw Error(ErrorCode::internal, fmt::format("oneDNN: {} failed (status {})", what, static_cast<int>(s)));
}

dnnl_data_type_t dnnl_type(DType t) {
  switch (t) {
    case DType::f32: return dnnl_f32;
    case DType::bf16: return dnnl_bf16;
    case DType::f16: return dnnl_f16;
    default: return dnnl_data_type_undef;
  }
}

dnnl_engine_t engine() {
  static dnnl_engine_t e = [] {
    dnnl_engine_t made = nullptr;
    check(dnnl_engine_create(&made, dnnl_cpu, 0), "engine creation");
    return made;
  }();
  return e;
}

dnnl_stream_t stream() {
  static dnnl_stream_t s = [] {
    dnnl_stream_t made = nullptr;
    check(dnnl_stream_create(&made, engine(), dnnl_stream_default_flags), "stream creation");
    return made;
  }();
  return s;
}

// A [rows, cols] matrix stored row-major with leading dimension ld, or (transposed) stored as
// [cols, rows].
dnnl_memory_desc_t matrix_desc(DType t, int64_t rows, int64_t cols, bool transposed, int64_t ld) {
  dnnl_memory_desc_t md;
  const dnnl_dims_t dims = {rows, cols};
  const dnnl_dims_t strides = {transposed ? 1 : ld, transposed ? ld : 1};
  check(dnnl_memory_desc_init_by_strides(&md, 2, dims, dnnl_type(t), strides), "memory descriptor");
  return md;
}

struct GemmShapeHash {
  size_t operator()(const GemmShape& s) const {
    size_t h = static_cast<size_t>(s.dtype);
    for (int64_t v : {s.m, s.n, s.k, s.lda, s.ldb, s.ldc, int64_t{s.trans_a}, int64_t{s.trans_b}})
      h = h * 1000003u ^ static_cast<size_t>(v);
    return h;
  }
};

}  // namespace

// The primitive and, per concurrent caller, the memory objects its arguments are bound to (made
// when it is prepared; a call only points them at its buffers). A caller takes a free slot; more
// callers at once than slots (more threads than kSlots calling one shape) make their own objects.
class PreparedGemm {
 public:
  static constexpr size_t kSlots = 16;

  explicit PreparedGemm(const GemmShape& s) : shape_(s) {
    a_ = matrix_desc(s.dtype, s.m, s.k, s.trans_a, s.lda);
    b_ = matrix_desc(s.dtype, s.k, s.n, s.trans_b, s.ldb);
    c_ = matrix_desc(s.dtype, s.m, s.n, false, s.ldc);
    dnnl_matmul_desc_t desc;
    check(dnnl_matmul_desc_init(&desc, &a_, &b_, nullptr, &c_), "matmul descriptor");
    dnnl_primitive_attr_t attr = nullptr;
    check(dnnl_primitive_attr_create(&attr), "attribute creation");
    std::unique_ptr<dnnl_primitive_attr, decltype(&dnnl_primitive_attr_destroy)> attr_owner(attr, dnnl_primitive_attr_destroy);
    check(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user), "scratchpad mode");
    if (dnnl_primitive_desc_create(&pd_, &desc, attr, engine(), nullptr) != dnnl_success) {
      pd_ = nullptr;  // no implementation at all for these types: the caller multiplies another way
      return;
    }
    const char* info = nullptr;
    check(dnnl_primitive_desc_query(pd_, dnnl_query_impl_info_str, 0, &info), "implementation query");
    impl_ = info ? info : "";
    scratch_ = *dnnl_primitive_desc_query_md(pd_, dnnl_query_scratchpad_md, 0);
    scratch_bytes_ = static_cast<int64_t>(dnnl_memory_desc_get_size(&scratch_));
    if (!usable()) return;
    check(dnnl_primitive_create(&primitive_, pd_), "primitive creation");
    for (Slot& slot : slots_) slot.memory = make_memory();
  }
  ~PreparedGemm() {
    for (Slot& slot : slots_) destroy(slot.memory);
    if (primitive_) dnnl_primitive_destroy(primitive_);
    if (pd_) dnnl_primitive_desc_destroy(pd_);
  }
  PreparedGemm(const PreparedGemm&) = delete;
  PreparedGemm& operator=(const PreparedGemm&) = delete;

  // Only the brgemm-based kernels ("brg:avx512_core", "brg:avx512_core_bf16", "brg:avx512_core_amx")
  // are used: they take all their scratch memory from the user scratchpad, so it is planned. The
  // gemm-based ones ("gemm:jit", the AVX2 and SSE4.1 f32 kernels and the bf16 emulation) allocate
  // packing buffers of their own on every call (tests/heap saw them), and the reference ones
  // ("ref:any") are plain loops.
  bool usable() const { return pd_ != nullptr && impl_.rfind("brg", 0) == 0; }
  int64_t scratch_bytes() const { return scratch_bytes_; }
  const GemmShape& shape() const { return shape_; }
  const std::string& implementation() const { return impl_; }

  void run(const void* a, const void* b, void* c, void* scratch) const {
    one_thread();
    for (Slot& slot : slots_) {
      if (slot.busy.exchange(true, std::memory_order_acquire)) continue;
      execute(slot.memory, a, b, c, scratch);
      slot.busy.store(false, std::memory_order_release);
      return;
    }
    Memory own = make_memory();
    execute(own, a, b, c, scratch);
    destroy(own);
  }

 private:
  using Memory = std::array<dnnl_memory_t, 4>;  // src, weights, dst, scratchpad
  struct Slot {
    Memory memory{};
    std::atomic<bool> busy{false};
  };

  Memory make_memory() const {
    Memory m{};
    const dnnl_memory_desc_t* descs[] = {&a_, &b_, &c_, &scratch_};
    for (size_t i = 0; i < m.size(); ++i)
      check(dnnl_memory_create(&m[i], descs[i], engine(), DNNL_MEMORY_NONE), "memory object creation");
    return m;
  }
  static void destroy(Memory& m) {
    for (dnnl_memory_t x : m)
      if (x) dnnl_memory_destroy(x);
  }

  void execute(const Memory& m, const void* a, const void* b, void* c, void* scratch) const {
    void* handles[] = {const_cast<void*>(a), const_cast<void*>(b), c, scratch};
    for (size_t i = 0; i < m.size(); ++i) check(dnnl_memory_set_data_handle(m[i], handles[i]), "binding a buffer");
    const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, m[0]}, {DNNL_ARG_WEIGHTS, m[1]}, {DNNL_ARG_DST, m[2]},
                                    {DNNL_ARG_SCRATCHPAD, m[3]}};
    check(dnnl_primitive_execute(primitive_, stream(), scratch_bytes_ > 0 ? 4 : 3, args), "matmul");
  }

  GemmShape shape_;
  dnnl_memory_desc_t a_{}, b_{}, c_{}, scratch_{};
  dnnl_primitive_desc_t pd_ = nullptr;
  dnnl_primitive_t primitive_ = nullptr;
  std::string impl_;
  int64_t scratch_bytes_ = 0;
  mutable std::array<Slot, kSlots> slots_;
};

const PreparedGemm* prepare_gemm(const GemmShape& shape) {
  const DotPath path = chosen_dot_path();  // caps oneDNN's ISA before its first use
  if (path == DotPath::openblas || dnnl_type(shape.dtype) == dnnl_data_type_undef) return nullptr;
  // Never destroyed: a pool thread may still prepare its state while the process exits.
  static auto* mutex = new std::shared_mutex;
  static auto* cache = new std::unordered_map<GemmShape, std::unique_ptr<PreparedGemm>, GemmShapeHash>;
  {
    std::shared_lock lock(*mutex);
    auto it = cache->find(shape);
    if (it != cache->end()) return it->second->usable() ? it->second.get() : nullptr;
  }
  one_thread();
  auto made = std::make_unique<PreparedGemm>(shape);
  std::unique_lock lock(*mutex);
  auto [it, inserted] = cache->emplace(shape, std::move(made));
  return it->second->usable() ? it->second.get() : nullptr;
}

int64_t gemm_scratch_bytes(const PreparedGemm& g) { return g.scratch_bytes(); }
const GemmShape& gemm_shape(const PreparedGemm& g) { return g.shape(); }
std::string gemm_implementation(const PreparedGemm& g) { return g.implementation(); }
namespace {
std::atomic<int64_t> g_gemm_calls{0};
}  // namespace

void run_gemm(const PreparedGemm& g, const void* a, const void* b, void* c, void* scratch) {
  g_gemm_calls.fetch_add(1, std::memory_order_relaxed);
  g.run(a, b, c, scratch);
}
void prepare_kernel_thread() { one_thread(); }

int64_t gemm_calls() { return g_gemm_calls.load(std::memory_order_relaxed); }

}  // namespace ferry::runtime::cpu
