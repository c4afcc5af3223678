#pragma once
// Where the parts of a predicted step come from (issue 37, item 6): for GEMMs, attention,
// memory-bound kernels, collectives, point-to-point and the host, whether their prices came
// from samples measured on the profile's machine, samples another machine's measurement lent
// a public profile, published microbenchmarks, NCCL's model on the system file's (data-sheet)
// links, or the roofline; and what `stepsim accuracy` measured over the open runs priced with
// the same cost data. A statement for the report: nothing here changes a price.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stepsim {

/// Where a price came from: bits, several per part (ProvenanceRecorder).
enum ProvenanceOrigin : unsigned {
  kFromMeasured = 1,   ///< samples measured on the profile's own machine
  kFromBorrowed = 2,   ///< a public profile's samples copied from another machine's profile
  kFromPublished = 4,  ///< published microbenchmarks (each sample cites its figure)
  kFromNcclModel = 8,  ///< NCCL's tuning model on the system file's links (data sheet)
  kFromDeepEp = 16,    ///< DeepEP's published fractions of the system's links
  kFromAsGemms = 32,   ///< attention without samples: its matmuls priced as GEMMs
  kFromRoofline = 64,  ///< the system file's roofline (data-sheet peaks, cited efficiencies)
};

/// The parts of a step the provenance names, in the order it names them.
enum class PricedPart : std::uint8_t { kGemm, kAttention, kMemoryBound, kCollective, kP2P };
inline constexpr std::size_t kPricedParts = 5;

enum class HostOrigin : std::uint8_t { kNotModelled, kMeasured, kBorrowed, kPublished };

/// What `stepsim accuracy` measured over the open runs (scenarios/published/) priced with the
/// same cost data: a fact of the open report, never applied to a prediction.
struct OpenAccuracy {
  std::int64_t runs = 0;  ///< 0: no open run is priced with this cost data
  double mean_error = 0;  ///< mean of predicted / measured step time - 1 (< 0: optimistic)
  double mean_absolute_error = 0;
  double min_error = 0, max_error = 0;
  bool operator==(const OpenAccuracy&) const = default;
};

struct Provenance {
  /// ProvenanceOrigin bits of each part as the step priced it (0: the step has none).
  std::array<unsigned, kPricedParts> parts{};
  std::string measured_on;                 ///< with kFromMeasured: the profile's machine and date
  std::vector<std::string> borrowed_from;  ///< with kFromBorrowed: the profiles (file names)
  HostOrigin host = HostOrigin::kNotModelled;
  std::string host_from;    ///< kBorrowed: the profile (file name) the host was copied from
  std::string host_detail;  ///< the framework and CPU its citation names ("torch 2.11.0, ...")
  std::string cost_data;    ///< "profile" or "roofline": what the accuracy figure is about
  /// The kernel spread synchronisations wait on (KernelSpread), e.g. "measured over 20
  /// repeats"; empty: none (nothing waits), and the line says nothing of it.
  std::string spread;
  /// Set by predict from the open report's table; absent where it was not looked up.
  std::optional<OpenAccuracy> accuracy;
  bool operator==(const Provenance&) const = default;
};

/// The report's one line, e.g. "GEMMs, attention: measured (vm: NVIDIA H100 80GB HBM3,
/// 2026-11-28); collectives: NCCL's model; host: measured (torch 2.11.0+cu130); stepsim
/// accuracy: no open run uses this profile". Empty when no part was priced and no host.
std::string provenance_line(const Provenance& p);

/// JSON names: "gemm", "attention", "memory_bound", "collectives", "p2p".
std::string_view priced_part_key(std::size_t part);
/// JSON names of the bits, in the line's order: "measured", "borrowed", "published",
/// "nccl_model", "deepep", "as_gemms", "roofline".
std::vector<std::string_view> origin_keys(unsigned origins);
/// "not_modelled", "measured", "borrowed", "published".
std::string_view host_origin_key(HostOrigin origin);

/// The host part of a profile's host citation: borrowed ("borrowed from
/// scenarios/profiles/F.json (...)": make_public_profiles.py) or measured, with the framework
/// and CPU words of its first parenthesis.
void read_host_citation(const std::string& citation, bool public_profile, Provenance& p);

/// The origins each part was priced from, as a step's ops reach a cost model: an atomic OR
/// per part, so that the result is the same whatever order threads price in.
class ProvenanceRecorder {
 public:
  void note(PricedPart part, unsigned origins) const {
    used_[static_cast<std::size_t>(part)].fetch_or(origins, std::memory_order_relaxed);
  }
  std::array<unsigned, kPricedParts> used() const {
    std::array<unsigned, kPricedParts> out{};
    for (std::size_t i = 0; i < kPricedParts; ++i)
      out[i] = used_[i].load(std::memory_order_relaxed);
    return out;
  }

 private:
  mutable std::array<std::atomic<unsigned>, kPricedParts> used_{};
};

}  // namespace stepsim
