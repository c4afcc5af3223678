#include "stepsim/cost/provenance.hpp"

#include <cmath>
#include <cstdio>
#include <utility>

namespace stepsim {

namespace {

struct OriginName {
  unsigned bit;
  std::string_view key;   // JSON
  std::string_view text;  // the line
};

// In the line's order: the samples first, then what stands in for samples.
constexpr std::array<OriginName, 7> kOrigins{{
    {kFromMeasured, "measured", "measured"},
    {kFromBorrowed, "borrowed", "borrowed"},
    {kFromPublished, "published", "published"},
    {kFromNcclModel, "nccl_model", "NCCL's model"},
    {kFromDeepEp, "deepep", "DeepEP's figures"},
    {kFromAsGemms, "as_gemms", "as GEMMs"},
    {kFromRoofline, "roofline", "roofline"},
}};

constexpr std::array<std::string_view, kPricedParts> kPartKeys{"gemm", "attention", "memory_bound",
                                                               "collectives", "p2p"};
constexpr std::array<std::string_view, kPricedParts> kPartNames{
    "GEMMs", "attention", "memory-bound", "collectives", "P2P"};

std::string joined(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : std::string(sep)) + s;
  return out;
}

/// "measured (vm: NVIDIA H100 80GB HBM3, 2026-11-28) + published": the machine and the
/// lending profiles are named at their first mention in the line only.
std::string origins_text(unsigned origins, const Provenance& p, unsigned& named) {
  std::vector<std::string> words;
  for (const OriginName& o : kOrigins) {
    if ((origins & o.bit) == 0) continue;
    std::string word(o.text);
    if ((named & o.bit) == 0 && o.bit == kFromMeasured && !p.measured_on.empty()) {
      word += " (" + p.measured_on + ")";
    }
    if ((named & o.bit) == 0 && o.bit == kFromBorrowed && !p.borrowed_from.empty()) {
      word += " (" + joined(p.borrowed_from, ", ") + ")";
    }
    named |= o.bit;
    words.push_back(std::move(word));
  }
  return joined(words, " + ");
}

std::string host_text(const Provenance& p) {
  const std::string detail = p.host_detail.empty() ? "" : " (" + p.host_detail + ")";
  switch (p.host) {
    case HostOrigin::kNotModelled:
      return "host: not modelled";
    case HostOrigin::kMeasured:
      return "host: measured" + detail;
    case HostOrigin::kBorrowed:
      return "host: borrowed (" + p.host_from + (p.host_detail.empty() ? "" : ", ") +
             p.host_detail + ")";
    case HostOrigin::kPublished:
      return "host: published" + detail;
  }
  return {};
}

/// "stepsim accuracy: this profile's 10 open runs 14.6% optimistic on average".
std::string accuracy_text(const OpenAccuracy& a, const std::string& cost_data) {
  const std::string subject = cost_data == "roofline" ? "the roofline" : "this profile";
  if (a.runs == 0) return "stepsim accuracy: no open run uses " + subject;
  char share[32];
  std::snprintf(share, sizeof share, "%.1f%%", 100.0 * std::abs(a.mean_error));
  const std::string sign = a.mean_error < 0 ? " optimistic" : " pessimistic";
  const std::string owner = cost_data == "roofline" ? "the roofline's " : "this profile's ";
  return "stepsim accuracy: " + owner +
         (a.runs == 1 ? "1 open run " + std::string(share) + sign
                      : std::to_string(a.runs) + " open runs " + share + sign + " on average");
}

}  // namespace

std::string_view priced_part_key(std::size_t part) { return kPartKeys.at(part); }

std::vector<std::string_view> origin_keys(unsigned origins) {
  std::vector<std::string_view> out;
  for (const OriginName& o : kOrigins) {
    if ((origins & o.bit) != 0) out.push_back(o.key);
  }
  return out;
}

std::string_view host_origin_key(HostOrigin origin) {
  switch (origin) {
    case HostOrigin::kNotModelled:
      return "not_modelled";
    case HostOrigin::kMeasured:
      return "measured";
    case HostOrigin::kBorrowed:
      return "borrowed";
    case HostOrigin::kPublished:
      return "published";
  }
  return "not_modelled";
}

std::string provenance_line(const Provenance& p) {
  // Parts priced from the same origins share one segment, in the parts' order.
  std::vector<std::pair<unsigned, std::vector<std::string>>> groups;
  for (std::size_t i = 0; i < kPricedParts; ++i) {
    if (p.parts[i] == 0) continue;
    auto same = groups.begin();
    while (same != groups.end() && same->first != p.parts[i]) ++same;
    if (same == groups.end()) {
      same = groups.emplace(groups.end(), p.parts[i], std::vector<std::string>{});
    }
    same->second.emplace_back(kPartNames[i]);
  }
  if (groups.empty() && p.host == HostOrigin::kNotModelled) return {};
  std::vector<std::string> segments;
  unsigned named = 0;
  for (const auto& [origins, parts] : groups) {
    segments.push_back(joined(parts, ", ") + ": " + origins_text(origins, p, named));
  }
  segments.push_back(host_text(p));
  if (!p.spread.empty()) segments.push_back("kernel spread: " + p.spread);
  if (p.accuracy) segments.push_back(accuracy_text(*p.accuracy, p.cost_data));
  return joined(segments, "; ");
}

void read_host_citation(const std::string& citation, bool public_profile, Provenance& p) {
  constexpr std::string_view kBorrowed = "borrowed from ";
  if (citation.starts_with(kBorrowed)) {
    p.host = HostOrigin::kBorrowed;
    // "borrowed from scenarios/profiles/h100-sxm5-80gb-measured.json (...): ...": the file.
    const std::size_t end = citation.find_first_of(" :(", kBorrowed.size());
    const std::string path = citation.substr(kBorrowed.size(), end - kBorrowed.size());
    p.host_from = path.substr(path.find_last_of('/') + 1);
  } else {
    p.host = public_profile ? HostOrigin::kPublished : HostOrigin::kMeasured;
  }
  // "(a lent NVIDIA H100 80GB HBM3 cloud VM, torch 2.11.0+cu130, CUDA 13.0; its CPU model not
  // recorded)": the words that say the framework and the CPU, which set the host's costs.
  const std::size_t open = citation.find('(');
  const std::size_t close = citation.find(')', open);
  if (open == std::string::npos || close == std::string::npos) return;
  const std::string inside = citation.substr(open + 1, close - open - 1);
  std::vector<std::string> kept;
  std::size_t at = 0;
  while (at <= inside.size()) {
    std::size_t next = inside.find_first_of(",;", at);
    if (next == std::string::npos) next = inside.size();
    std::string clause = inside.substr(at, next - at);
    clause.erase(0, clause.find_first_not_of(' '));
    if (clause.find("torch") != std::string::npos || clause.find("CPU") != std::string::npos) {
      kept.push_back(clause);
    }
    at = next + 1;
  }
  p.host_detail = joined(kept, ", ");
}

}  // namespace stepsim
