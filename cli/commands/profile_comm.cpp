#include "cli/commands/profile_comm.h"

#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/options/output_file.h"
#include "cli/report/table.h"
#include "executor/distributed/collectives.h"
#include "model/catalog/link_catalog.h"
#include "model/error.h"
#include "model/json_file.h"
#include "model/units.h"
#include "profiler/comm_link.h"
#include "workflow/training/launch.h"

namespace papaya::cli {
namespace {

struct CommProfile {
  int ranks = 0;
  std::vector<model::CommSample> samples;
  model::LinkFit link;
};

void to_json(nlohmann::json& doc, const CommProfile& c) {
  nlohmann::json samples = nlohmann::json::array();
  for (const auto& s : c.samples) {
    samples.push_back({{"bytes", s.bytes}, {"seconds", s.seconds}, {"predicted_seconds", c.link.seconds(s.bytes, c.ranks)}});
  }
  doc = {{"ranks", c.ranks},
         {"collective", "allreduce (Gloo, loopback)"},
         {"samples", samples},
         {"latency_s", c.link.latency_s},
         {"bytes_per_s", c.link.bytes_per_s},
         {"r2", c.link.r2 ? nlohmann::json(*c.link.r2) : nlohmann::json()}};
}

void print_text(std::ostream& out, const CommProfile& c) {
  out << "papaya profile --comm: allreduce over " << c.ranks
      << " ranks on this host (Gloo, loopback); the slowest rank's median of 5\n\n";
  Table table({"bytes", "measured", "fitted", "wire GB/s"});
  for (const auto& s : c.samples) {
    const double wire = model::ring_allreduce_wire_bytes(s.bytes, c.ranks);
    table.add_row({model::format_bytes(s.bytes), fixed(s.seconds * 1e3, 3) + " ms",
                   fixed(c.link.seconds(s.bytes, c.ranks) * 1e3, 3) + " ms", fixed(wire / s.seconds / 1e9, 2)});
  }
  table.print(out);
  out << "\nlink: latency " << fixed(c.link.latency_s * 1e6, 1) << " us, bandwidth " << fixed(c.link.bytes_per_s / 1e9, 2)
      << " GB/s on each rank's wire (a ring allreduce of B bytes puts 2(N-1)/N x B there), R² "
      << (c.link.r2 ? fixed(*c.link.r2, 4) : std::string("-")) << "\n";
}

// The link file of a profile: the fit, with what it was fitted to.
nlohmann::json link_file(const CommProfile& c) {
  const std::string how = "measured by papaya profile --comm: allreduce over " + std::to_string(c.ranks) +
                          " ranks on one host (Gloo, loopback), fitted";
  nlohmann::json doc = model::link_to_json({"loopback-" + std::to_string(c.ranks),
                                            "this host's ranks over loopback (Gloo)",
                                            {},
                                            c.link,
                                            {{"bandwidth", how}, {"latency", how}}});
  nlohmann::json measured;
  to_json(measured, c);
  doc["measured"] = {{"ranks", c.ranks}, {"samples", measured["samples"]}, {"r2", measured["r2"]}};
  return doc;
}

}  // namespace

void profile_comm(int nproc, double timeout_s, const std::string& out, const Output& output) {
  if (!out.empty()) check_writable(out);
  const auto world = executor::world_from_environment();
  if (!world) {
    if (nproc < 2) throw InputError("--comm times an exchange between ranks: give --nproc 2 or more");
    return workflow::launch_ranks(nproc);
  }
  executor::Collectives collectives(*world, std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
  CommProfile c;
  c.ranks = world->size;
  c.samples = profiler::time_allreduce(collectives);
  c.link = model::fit_link(c.samples, c.ranks);
  if (world->rank != 0) return;
  if (!out.empty()) model::write_json_file(out, link_file(c));
  show(c, output);
}

}  // namespace papaya::cli
