#include "runtime/process_group.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "ferry/error.h"

#ifdef FERRY_HAS_MPI
#include <mpi.h>
#endif

namespace ferry::runtime::processes {
namespace {

#ifdef FERRY_HAS_MPI
struct Pending {
  MPI_Request request = MPI_REQUEST_NULL;
  std::string what;
  bool done = false;
};
#endif

struct Group {
  std::mutex mu;  // MPI is initialized MPI_THREAD_SERIALIZED: one caller at a time
  bool joined = false;
  int index = 0, count = 1;
  double timeout = 300;
  // An exchange failed: a peer is gone or out of step, and MPI_Finalize (which waits for every
  // process) could wait for ever, so the process leaves without it.
  std::atomic<bool> broken{false};
#ifdef FERRY_HAS_MPI
  std::map<int64_t, Pending> pending;  // by ticket
  int64_t next_ticket = 0;
#endif
  std::atomic<int64_t> in_flight{0};  // pending.size(), read without the lock
};

Group& group() {
  static Group g;
  return g;
}

[[noreturn]] void no_mpi(std::string_view what) {
  throw Error(ErrorCode::unimplemented,
              fmt::format("{}: this ferry was built without MPI (install Debian's libopenmpi-dev and openmpi-bin, "
                          "then configure again: CMake finds MPI and builds it in)",
                          what));
}

void check_joined(std::string_view what) {
  if (!group().joined)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{}: this process has not joined the others: call ferry::distributed::initialize() "
                            "first",
                            what));
}

#ifdef FERRY_HAS_MPI

std::string mpi_message(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return fmt::format("MPI error {}", code);
  return std::string(text, static_cast<size_t>(length));
}

[[noreturn]] void peers_failed(std::string_view what, const std::string& why) {
  group().broken = true;
  throw Error(ErrorCode::unavailable,
              fmt::format("{}: the exchange with the other processes failed ({}); a process stopped or failed, "
                          "and this one cannot go on with it",
                          what, why));
}

void check(int code, std::string_view what) {
  if (code != MPI_SUCCESS) peers_failed(what, mpi_message(code));
}

// Waits for `request` by polling, so that a process that stops taking part makes this one fail
// at the deadline instead of waiting for ever.
void wait(MPI_Request& request, std::string_view what) {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::duration<double>(group().timeout);
  for (int polls = 0;; ++polls) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
    if (done) return;
    const auto now = std::chrono::steady_clock::now();
    // The request cannot be freed while the exchange is outstanding; this process must stop using
    // MPI: what it runs next that needs the others fails the same way.
    if (now > deadline) time_out(what);
    // MPI moves data only inside its calls, so polling is what makes progress: back to back (giving
    // the core away to any thread that wants it) for a while, then less eagerly.
    if (now - start > std::chrono::milliseconds(50)) std::this_thread::sleep_for(std::chrono::microseconds(20));
    else std::this_thread::yield();
  }
}

// Halves are summed in float, rounded to their type after each addition (MPI has no such types).
template <class H> void sum_halves(void* in, void* inout, int* len, MPI_Datatype*) {
  const H* a = static_cast<const H*>(in);
  H* b = static_cast<H*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = H(static_cast<float>(a[i]) + static_cast<float>(b[i]));
}

struct Halves {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op sum_f16 = MPI_OP_NULL, sum_bf16 = MPI_OP_NULL;
};

Halves& halves() {
  static Halves h = [] {
    Halves x;
    MPI_Type_contiguous(2, MPI_BYTE, &x.type);
    MPI_Type_commit(&x.type);
    MPI_Op_create(&sum_halves<float16>, 1, &x.sum_f16);
    MPI_Op_create(&sum_halves<bfloat16>, 1, &x.sum_bf16);
    return x;
  }();
  return h;
}

std::pair<MPI_Datatype, MPI_Op> sum_of(DType dtype, std::string_view what) {
  switch (dtype) {
    case DType::f32: return {MPI_FLOAT, MPI_SUM};
    case DType::f64: return {MPI_DOUBLE, MPI_SUM};
    case DType::i32: return {MPI_INT32_T, MPI_SUM};
    case DType::f16: return {halves().type, halves().sum_f16};
    case DType::bf16: return {halves().type, halves().sum_bf16};
    default:
      throw Error(ErrorCode::invalid_argument, fmt::format("{}: cannot sum {} values", what, dtype_name(dtype)));
  }
}

int as_int(int64_t n, std::string_view what) {
  if (n < 0 || n > INT32_MAX)
    throw Error(ErrorCode::unimplemented,
                fmt::format("{}: {} elements is more than one MPI exchange carries (2^31 - 1); split the value", what,
                            n));
  return static_cast<int>(n);
}

#endif

}  // namespace

bool launched() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

void join(double timeout_seconds) {
  Group& g = group();
  std::lock_guard<std::mutex> lock(g.mu);
  if (g.joined) throw Error(ErrorCode::invalid_argument, "distributed::initialize: already called in this process");
  if (!(timeout_seconds > 0))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("distributed::initialize: timeout_seconds {} is not a positive number of seconds",
                            timeout_seconds));
#ifdef FERRY_HAS_MPI
  if (!launched())
    throw Error(ErrorCode::invalid_argument,
                "distributed::initialize: this process was not started by a launcher (no OMPI_COMM_WORLD_SIZE, "
                "PMIX_RANK or PMI_SIZE in its environment); start every process with one, e.g. "
                "`mpirun -np 2 PROGRAM ARGS...` (as root add --allow-run-as-root; with fewer cores than "
                "processes add --oversubscribe)");
  int already = 0;
  MPI_Initialized(&already);
  if (!already) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
      throw Error(ErrorCode::invalid_argument,
                  "distributed::initialize: MPI_Init_thread failed: the launcher's environment does not let this "
                  "process join its peers");
    std::atexit([] {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized && !group().broken) MPI_Finalize();
    });
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &g.index);
  MPI_Comm_size(MPI_COMM_WORLD, &g.count);
  g.timeout = timeout_seconds;
  g.joined = true;
#else
  no_mpi("distributed::initialize");
#endif
}

bool joined() {
  std::lock_guard<std::mutex> lock(group().mu);
  return group().joined;
}
int index() {
  std::lock_guard<std::mutex> lock(group().mu);
  return group().index;
}
int count() {
  std::lock_guard<std::mutex> lock(group().mu);
  return group().count;
}
double timeout_seconds() {
  std::lock_guard<std::mutex> lock(group().mu);
  return group().timeout;
}

#ifdef FERRY_HAS_MPI
namespace {
int64_t keep(MPI_Request r, std::string_view what) {
  Group& g = group();
  const int64_t t = g.next_ticket++;
  g.pending[t] = Pending{r, std::string(what), false};
  g.in_flight = static_cast<int64_t>(g.pending.size());
  return t;
}
}  // namespace
#endif

int64_t start_all_reduce_sum(const void* x, void* y, int64_t count, DType dtype, std::string_view what) {
  check_joined(what);
#ifdef FERRY_HAS_MPI
  std::lock_guard<std::mutex> lock(group().mu);
  auto [type, op] = sum_of(dtype, what);
  MPI_Request r;
  check(MPI_Iallreduce(x == y ? MPI_IN_PLACE : x, y, as_int(count, what), type, op, MPI_COMM_WORLD, &r), what);
  return keep(r, what);
#else
  no_mpi(what);
#endif
}

int64_t start_all_gather(const void* x, void* y, int64_t bytes, std::string_view what) {
  check_joined(what);
#ifdef FERRY_HAS_MPI
  std::lock_guard<std::mutex> lock(group().mu);
  MPI_Request r;
  const int n = as_int(bytes, what);
  check(MPI_Iallgather(x, n, MPI_BYTE, y, n, MPI_BYTE, MPI_COMM_WORLD, &r), what);
  return keep(r, what);
#else
  no_mpi(what);
#endif
}

int64_t start_reduce_scatter_sum(const void* x, void* y, int64_t count, DType dtype, std::string_view what) {
  check_joined(what);
#ifdef FERRY_HAS_MPI
  std::lock_guard<std::mutex> lock(group().mu);
  auto [type, op] = sum_of(dtype, what);
  MPI_Request r;
  check(MPI_Ireduce_scatter_block(x, y, as_int(count, what), type, op, MPI_COMM_WORLD, &r), what);
  return keep(r, what);
#else
  no_mpi(what);
#endif
}

void wait([[maybe_unused]] int64_t ticket) {
#ifdef FERRY_HAS_MPI
  std::lock_guard<std::mutex> lock(group().mu);
  auto it = group().pending.find(ticket);
  if (it == group().pending.end()) throw Error(ErrorCode::internal, fmt::format("collective ticket {} is not in flight", ticket));
  Pending p = std::move(it->second);
  group().pending.erase(it);
  group().in_flight = static_cast<int64_t>(group().pending.size());
  if (!p.done) wait(p.request, p.what);
#else
  no_mpi("collective_done");
#endif
}

void progress() {
#ifdef FERRY_HAS_MPI
  std::lock_guard<std::mutex> lock(group().mu);
  for (auto& [t, p] : group().pending) {
    if (p.done) continue;
    int done = 0;
    check(MPI_Test(&p.request, &done, MPI_STATUS_IGNORE), p.what);
    p.done = done != 0;
  }
#endif
}

int64_t in_flight() { return group().in_flight.load(std::memory_order_relaxed); }

// The blocking forms: started, then waited for.
void all_reduce_sum(const void* x, void* y, int64_t count, DType dtype, std::string_view what) {
  wait(start_all_reduce_sum(x, y, count, dtype, what));
}
void all_gather(const void* x, void* y, int64_t bytes, std::string_view what) {
  wait(start_all_gather(x, y, bytes, what));
}
void reduce_scatter_sum(const void* x, void* y, int64_t count, DType dtype, std::string_view what) {
  wait(start_reduce_scatter_sum(x, y, count, dtype, what));
}

namespace {
class GroupExchanges final : public Exchanges {
 public:
  uint64_t start(Kind kind, const void* x, void* y, int64_t count, DType dtype, const char* what, Stream) override {
    switch (kind) {
      case Kind::all_reduce_sum: return static_cast<uint64_t>(start_all_reduce_sum(x, y, count, dtype, what));
      case Kind::all_gather:
        return static_cast<uint64_t>(start_all_gather(x, y, count * static_cast<int64_t>(dtype_size(dtype)), what));
      case Kind::reduce_scatter_sum: break;
    }
    return static_cast<uint64_t>(start_reduce_scatter_sum(x, y, count, dtype, what));
  }
  void wait(uint64_t ticket, Stream) override { processes::wait(static_cast<int64_t>(ticket)); }
};
}  // namespace

Exchanges& exchanges() {
  static GroupExchanges e;
  return e;
}

void abandon() { group().broken = true; }

void time_out(std::string_view what) {
  abandon();
  throw Error(ErrorCode::unavailable,
              fmt::format("{}: process {} of {} waited {:.0f} s (the timeout distributed::initialize was given) for "
                          "the other processes to take part; one of them stopped, failed or is running another program",
                          what, group().index, group().count, group().timeout));
}

std::vector<std::string> all_gather_text(const std::string& text, std::string_view what) {
  check_joined(what);
  const int n = count();
  const int64_t length = static_cast<int64_t>(text.size());
  std::vector<int64_t> lengths(static_cast<size_t>(n));
  all_gather(&length, lengths.data(), sizeof(int64_t), what);
  int64_t longest = 0;
  for (int64_t l : lengths) longest = std::max(longest, l);
  std::string padded = text;
  padded.resize(static_cast<size_t>(longest), '\0');
  std::string all(static_cast<size_t>(longest * n), '\0');
  if (longest > 0) all_gather(padded.data(), all.data(), longest, what);
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i)
    out.push_back(all.substr(static_cast<size_t>(i * longest), static_cast<size_t>(lengths[static_cast<size_t>(i)])));
  return out;
}

}  // namespace ferry::runtime::processes
