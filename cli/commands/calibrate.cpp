// papaya calibrate --out my-gpu.json: times products, fused attention,
// memory passes and a tiny kernel on this machine's GPU, fits the kernel
// model's figures to them (model/catalog/calibration.h) and writes a
// hardware entry with them; `--hardware my-gpu.json` then prices any
// network on this GPU with its own figures.
#include <memory>

#include "cli/commands/commands.h"
#include "cli/options/output_file.h"
#include "cli/report/progress.h"
#include "cli/report/report.h"
#include "cli/report/table.h"
#include "executor/device.h"
#include "model/catalog/calibration.h"
#include "model/catalog/target.h"
#include "model/error.h"
#include "model/json_file.h"
#include "profiler/kernel_sweep.h"

namespace papaya::cli {
namespace {

struct CalibrateArgs {
  std::string device = "cuda";
  std::string out;
  std::string hardware;
  std::string name;
  int repetitions = 10;
};

struct Calibrated {
  std::string path, name, base, device_name, source;
  model::KernelModel typical, measured;
  std::vector<std::string> still_typical;
  size_t kernels = 0;
};

std::string date_today() {
  const std::time_t now = std::time(nullptr);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", std::gmtime(&now));
  return text;
}

Calibrated calibrate(const CalibrateArgs& args) {
  check_writable(args.out);
  const torch::Device device = executor::resolve_device(args.device);
  if (!device.is_cuda()) {
    throw InputError("device " + args.device + ": calibrate measures a GPU's kernels (a CPU's profile is priced as measured)");
  }
  const model::MachineInfo machine = profiler::device_machine(device);
  std::string base = args.hardware;
  if (base.empty()) {
    const auto entry = model::catalog_entry_for(machine);
    if (!entry)
      throw InputError(machine.device_name + " is not in the hardware catalog: name the entry nearest to it with --hardware");
    base = entry->name;
  }
  const model::HardwareSpec hardware = model::load_hardware(base);
  const profiler::SweepSize size{8192, 1024.0 * 1024 * 1024, 4096, args.repetitions};
  std::vector<model::KernelMeasurement> measured;
  {
    Progress bar("calibrating " + machine.device_name);
    measured =
        profiler::run_sweep(device, profiler::planned_sweep(size), size, [&](int done, int total) { bar.update(done, total); });
  }
  Calibrated c;
  c.path = args.out;
  c.name = args.name.empty() ? hardware.name + "-calibrated" : args.name;
  c.base = hardware.name;
  c.device_name = machine.device_name;
  c.source = "papaya calibrate on " + machine.device_name + ", " + date_today() + ", LibTorch " + machine.torch_version;
  const model::Calibration fitted = model::fit_kernel_model(hardware, measured, c.source);
  model::write_json_file(args.out, model::calibrated_entry(model::hardware_entry_json(base), c.name, fitted, measured));
  c.typical = hardware.kernels;
  c.measured = fitted.kernels;
  c.still_typical = fitted.typical;
  c.kernels = measured.size();
  return c;
}

void to_json(nlohmann::json& out, const Calibrated& c) {
  const auto figures = [](const model::KernelModel& k) {
    return nlohmann::json{{"matmul_efficiency", k.matmul_efficiency},
                          {"attention_forward_efficiency", k.attention_forward_efficiency},
                          {"attention_backward_efficiency", k.attention_backward_efficiency},
                          {"memory_efficiency", k.memory_efficiency},
                          {"kernel_latency_s", k.kernel_latency_s}};
  };
  out = {{"file", c.path},
         {"name", c.name},
         {"base", c.base},
         {"device", c.device_name},
         {"source", c.source},
         {"kernels_timed", c.kernels},
         {"typical", figures(c.typical)},
         {"measured", figures(c.measured)},
         {"not_measured", c.still_typical}};
}

void print_text(std::ostream& out, const Calibrated& c) {
  out << c.device_name << ": " << c.kernels << " kernels timed; the kernel model's figures, typical and measured:\n\n";
  Table table({"figure", "typical", "measured"});
  for (const auto& [path, value] : c.measured.matmul_efficiency) {
    table.add_row({path + " products, of the peak", fixed(c.typical.matmul_efficiency_for(path), 2), fixed(value, 2)});
  }
  table.add_row({"fused attention forward", fixed(c.typical.attention_forward_efficiency, 2),
                 fixed(c.measured.attention_forward_efficiency, 2)});
  table.add_row({"fused attention backward", fixed(c.typical.attention_backward_efficiency, 2),
                 fixed(c.measured.attention_backward_efficiency, 2)});
  table.add_row(
      {"memory passes, of the bandwidth", fixed(c.typical.memory_efficiency, 2), fixed(c.measured.memory_efficiency, 2)});
  table.add_row({"kernel latency us", fixed(c.typical.kernel_latency_s * 1e6, 1), fixed(c.measured.kernel_latency_s * 1e6, 1)});
  table.print(out);
  if (!c.still_typical.empty()) {
    out << "not measured (typical kept):";
    for (const auto& f : c.still_typical) out << " " << f << (&f == &c.still_typical.back() ? "" : ",");
    out << "\n";
  }
  out << "wrote " << c.path << " (" << c.name << ", from " << c.base << "): use it with --hardware " << c.path << "\n";
}

}  // namespace

void register_calibrate(CLI::App& app) {
  auto args = std::make_shared<CalibrateArgs>();
  auto* cmd = app.add_subcommand(
      "calibrate",
      "Time products, fused attention, memory passes and kernel launches on this machine's GPU (a few minutes) and write "
      "a hardware entry with the kernel model's figures fitted to them; --hardware FILE then prices any network with them.");
  cmd->add_option("--out", args->out, "The hardware entry to write (FILE.json)")->required();
  cmd->add_option("--device", args->device, "The GPU to measure (cuda, cuda:N)")->capture_default_str();
  cmd->add_option("--hardware", args->hardware,
                  "The catalog entry whose datasheet figures (peaks, bandwidth, links) the file keeps (default: this GPU's)");
  cmd->add_option("--name", args->name, "The entry's name (default: the catalog entry's, with -calibrated)");
  cmd->add_option("--repetitions", args->repetitions, "Timings of each kernel (their median is kept)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  const auto output = add_output_options(cmd);
  cmd->callback([args, output] { show(calibrate(*args), *output); });
}

}  // namespace papaya::cli
