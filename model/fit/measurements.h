#pragma once
// Measured training runs, from a CSV (format: bench/data/README.md) with a
// header naming these columns, in any order:
//   gpu,network,precision,strategy,batch,oom,samples_per_s,iter_s,peak_mib
// and optionally `gpus` (data-parallel GPUs, each at `batch`; 1 without it).
// One row is one run of a network at one batch size; rows are grouped into
// series by (gpu, gpus, network, precision, strategy). `gpu` names a hardware
// catalog entry or alias, or any other GPU: such a series keeps the name as
// written and has no memory figure, so fitting it needs a budget
// (model/fit/global_fit.h). A malformed row is an InputError naming file:line,
// the column and what was expected.
#include <istream>
#include <optional>
#include <string>
#include <vector>

namespace papaya::model {

struct MeasuredRun {
  int line = 0;  // in the CSV; the header is line 1
  int batch = 0;
  bool oom = false;  // ran out of memory: an upper bound on the series' batch
  std::optional<double> samples_per_s;
  std::optional<double> iter_s;
  std::optional<double> peak_bytes;

  // Throughput: samples_per_s, else batch / iter_s.
  double throughput() const;
  // The iteration time that throughput implies: batch / samples_per_s, else
  // iter_s. Where the sources give both, they can disagree (BERT rows: by ~6%);
  // fits use this one so that b / T(b) is the measured throughput.
  double iteration_s() const;
};

struct MeasuredSeries {
  std::string gpu;                         // the catalog name ("V100-16GB" for "v100"); as written outside the catalog
  std::optional<double> gpu_memory_bytes;  // the catalog's; none for a GPU outside it
  int gpus = 1;                            // data-parallel, `batch` on each
  std::string network, precision, strategy;
  // Some sources wrote bytes into peak_mib. A series whose every peak_mib is
  // above the GPU's memory in MiB (no peak can be) is read as bytes. For a
  // GPU outside the catalog the line is the largest memory in the catalog:
  // not the budget, which measured peaks may well exceed.
  bool peak_was_bytes = false;
  std::vector<MeasuredRun> runs;  // in file order
};

struct Measurements {
  std::string source;
  std::vector<MeasuredSeries> series;  // in order of first appearance
};

Measurements read_measurements(const std::string& path);

// `source` names the text in errors ("file.csv:12: ...").
Measurements parse_measurements(std::istream& in, const std::string& source);

}  // namespace papaya::model
