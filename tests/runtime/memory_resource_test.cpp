// The host memory resource's reuse of large mappings (runtime/memory_resource.h): what a run gives
// back is handed to the next allocation it holds without wasting more than as much again.
#include "runtime/memory_resource.h"

#include <cstring>

#include <gtest/gtest.h>

namespace ferry::runtime {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(MappingCache, ASmallerArenaReusesTheTouchedPagesOfALargerOne) {
  release_cached_mappings();
  MemoryResource& r = host_resource(MemoryKind::device);
  void* big = r.allocate(8 * kMiB);
  std::memset(big, 1, 8 * kMiB);
  r.deallocate(big, 8 * kMiB);
  void* smaller = r.allocate(6 * kMiB);  // within 2x: the same mapping, its pages already touched
  EXPECT_EQ(smaller, big);
  r.deallocate(smaller, 6 * kMiB);
  void* much_smaller = r.allocate(3 * kMiB);  // would waste more than it uses: a mapping of its own
  EXPECT_NE(much_smaller, big);
  void* again = r.allocate(8 * kMiB);  // the 8 MiB mapping, whole, after serving 6 MiB
  EXPECT_EQ(again, big);
  std::memset(again, 2, 8 * kMiB);  // every byte of it is still mapped
  r.deallocate(again, 8 * kMiB);
  r.deallocate(much_smaller, 3 * kMiB);
  release_cached_mappings();
}

TEST(MappingCache, ABiggerRequestNeverGetsASmallerMapping) {
  release_cached_mappings();
  MemoryResource& r = host_resource(MemoryKind::device);
  void* a = r.allocate(4 * kMiB);
  r.deallocate(a, 4 * kMiB);
  void* b = r.allocate(5 * kMiB);
  EXPECT_NE(b, a);
  std::memset(b, 3, 5 * kMiB);
  r.deallocate(b, 5 * kMiB);
  release_cached_mappings();
}

}  // namespace
}  // namespace ferry::runtime
