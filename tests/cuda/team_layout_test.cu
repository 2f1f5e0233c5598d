// The shared-memory layout of the warp teams (kernels/cuda/team.cuh, tiles.cuh), on the host:
// no two teams' exchange buffers overlap, and the teams of one warp reach their exchange
// buffers and their storage without bank conflicts. The banks are modelled here from the
// addresses alone: 32 banks of 4 bytes; a warp's access of 4-byte Reals is one wavefront of 32
// lanes, of 8-byte Reals two of 16 lanes; a wavefront conflicts when two different words of
// it fall into one bank. No GPU needed.
#include <gtest/gtest.h>

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "kernels/cuda/tiles.cuh"

namespace sinkgrad::testing {
namespace {

using cuda::team_block_threads;
using cuda::team_storage_reals;
using cuda::TeamExchange;
using cuda::TeamShape;

// The word addresses of a warp's lanes reading Reals at `reals[lane]` (in Reals): the first
// conflict found, as text, or "" when every wavefront touches each bank with one word at most.
std::string bank_conflict(const std::vector<long>& reals, std::size_t real_size) {
  const int lanes_per_wavefront = static_cast<int>(128 / real_size);
  for (int first = 0; first < 32; first += lanes_per_wavefront) {
    std::set<long> words;
    for (int lane = first; lane < first + lanes_per_wavefront; ++lane) {
      const long byte = reals[lane] * static_cast<long>(real_size);
      for (std::size_t w = 0; w < real_size / 4; ++w) words.insert(byte / 4 + static_cast<long>(w));
    }
    std::set<long> banks;
    for (long word : words)
      if (!banks.insert(word % 32).second)
        return "lanes " + std::to_string(first) + ".." +
               std::to_string(first + lanes_per_wavefront - 1) + ": two words in bank " +
               std::to_string(word % 32);
  }
  return "";
}

template <class Shape, class Real>
void check_exchange() {
  using X = TeamExchange<Shape>;
  constexpr int W = Shape::W, cap = Shape::cap;
  const int teams = team_block_threads / W;
  const std::string what = "W = " + std::to_string(W) + ", cap = " + std::to_string(cap) + ", " +
                           std::to_string(sizeof(Real)) + "-byte Reals";
  // Every team's two buffers inside the block's exchange and apart from every other's.
  std::vector<int> owner(static_cast<std::size_t>(X::reals(teams)), -1);
  for (int k = 0; k < teams; ++k)
    for (int b = 0; b < 2; ++b)
      for (int i = 0; i < cap; ++i) {
        const int at = X::offset(k) + b * X::buffer_span + i;
        ASSERT_GE(at, 0) << what;
        ASSERT_LT(at, X::reals(teams)) << what;
        ASSERT_EQ(owner[static_cast<std::size_t>(at)], -1)
            << what << ": teams " << owner[static_cast<std::size_t>(at)] << " and " << k
            << " share Real " << at;
        owner[static_cast<std::size_t>(at)] = k;
      }
  EXPECT_EQ(X::reals(teams) % 4, 0) << what << ": storage after it must stay 16-byte aligned";
  // Each warp of the block storing lane l's component of a shared vector into one buffer.
  for (int warp = 0; warp < team_block_threads / 32; ++warp)
    for (int b = 0; b < 2; ++b) {
      std::vector<long> reals(32);
      for (int lane = 0; lane < 32; ++lane) {
        const int thread = warp * 32 + lane;
        reals[static_cast<std::size_t>(lane)] =
            X::offset(thread / W) + b * X::buffer_span + thread % W;
      }
      EXPECT_EQ(bank_conflict(reals, sizeof(Real)), "") << what << ", buffer " << b;
    }
}

template <class Shape, class Real>
void check_storage() {
  constexpr int W = Shape::W, cap = Shape::cap;
  // Tapes of the unrolled kernels (41 and 42 vectors at T = 20), checkpointed ones, odd sizes.
  for (int requested : {41 * cap, 42 * cap, 44 * cap, 97 * cap, 4, 12, 100, 336, 1000}) {
    const int size = team_storage_reals<Shape>(requested);
    const std::string what = "W = " + std::to_string(W) + ", " + std::to_string(sizeof(Real)) +
                             "-byte Reals, " + std::to_string(requested) + " Reals asked";
    EXPECT_GE(size, requested) << what;
    EXPECT_LE(size, requested + 2 * cap) << what;
    EXPECT_EQ(size % cap, 0) << what;
    // The teams of a warp reading or writing one vector of their storage at the same offset.
    for (int vector : {0, 1, 7, 40}) {
      std::vector<long> reals(32);
      for (int lane = 0; lane < 32; ++lane)
        reals[static_cast<std::size_t>(lane)] =
            static_cast<long>(lane / W) * size + vector * cap + lane % W;
      EXPECT_EQ(bank_conflict(reals, sizeof(Real)), "") << what << ", vector " << vector;
    }
  }
  EXPECT_EQ(team_storage_reals<Shape>(0), 0);  // kernels without storage get none
}

TEST(TeamLayout, ExchangeBuffersApartAndWithoutBankConflicts) {
  check_exchange<TeamShape<4, 1, 4>, float>();
  check_exchange<TeamShape<4, 1, 4>, double>();
  check_exchange<TeamShape<4, 1>, double>();
  check_exchange<TeamShape<8, 1, 8>, float>();
  check_exchange<TeamShape<8, 1, 8>, double>();
  check_exchange<TeamShape<16, 1, 16>, float>();
  check_exchange<TeamShape<16, 1, 16>, double>();
  check_exchange<TeamShape<32, 1, 32>, float>();
  check_exchange<TeamShape<32, 1, 32>, double>();
  check_exchange<TeamShape<32, 2>, float>();
}

TEST(TeamLayout, TeamStorageWithoutBankConflicts) {
  check_storage<TeamShape<4, 1, 4>, float>();
  check_storage<TeamShape<4, 1, 4>, double>();
  check_storage<TeamShape<8, 1, 8>, float>();
  check_storage<TeamShape<8, 1, 8>, double>();
  check_storage<TeamShape<16, 1, 16>, float>();
  check_storage<TeamShape<16, 1, 16>, double>();
}

}  // namespace
}  // namespace sinkgrad::testing
