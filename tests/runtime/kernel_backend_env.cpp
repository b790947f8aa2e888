// The kernel tests on a backend that cannot run here (FERRY_KERNEL_TEST_BACKEND=cuda on a machine
// without a GPU), or on a dot_general path this processor lacks (FERRY_DOT_PATH=amx, say), skip,
// every one, saying why, instead of failing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "runtime/backend.h"
#include "runtime/cpu/dot_path.h"
#include "runtime/kernel_test_util.h"

namespace ferry::kernel_test {
namespace {

class KernelBackendEnvironment : public testing::Environment {
 public:
  void SetUp() override {
    const std::string name = kernel_backend_name();
    std::string why;
    if (!runtime::backend_available(name, &why))
      GTEST_SKIP() << "kernel tests on the " << name << " backend skipped: " << why;
    if (const char* path = std::getenv("FERRY_DOT_PATH"); path != nullptr && std::string_view(path) != "auto") {
      const auto paths = runtime::cpu::available_dot_paths();
      if (std::none_of(paths.begin(), paths.end(), [&](auto p) { return runtime::cpu::dot_path_name(p) == path; }))
        GTEST_SKIP() << "kernel tests on dot path " << path << " skipped: this processor lacks it";
    }
  }
};

[[maybe_unused]] testing::Environment* const environment =
    testing::AddGlobalTestEnvironment(new KernelBackendEnvironment);

}  // namespace
}  // namespace ferry::kernel_test
