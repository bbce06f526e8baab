// papaya inspect ARCHIVE: what papaya makes of a TorchScript archive — the
// forward's signature and inputs, the module tree with parameters and calls,
// and which modules it treats as layers and which as segments; with --batch,
// one training step on synthetic inputs and what each module saves for
// backward.
#include "cli/commands/commands.h"
#include "cli/options/number_checks.h"
#include "cli/report/report.h"
#include "cli/report/table.h"
#include "executor/torchscript/archive.h"
#include "executor/torchscript/module_tree.h"
#include "executor/torchscript/recorded_step.h"
#include "model/error.h"
#include "model/units.h"
#include "profiler/out_of_memory.h"

namespace papaya::cli {
namespace {

namespace ts = executor::torchscript;

struct InspectArgs {
  std::string archive;
  std::vector<std::string> inputs;
  int64_t batch = 0;  // 0: no step
  std::string loss;   // "": from the output's shape
};

// One step's figures: the loss made of the output, what each module saved.
struct Step {
  int64_t batch = 0;
  std::string loss;
  ts::SavedBytes saved;
};

struct Inspection {
  std::string path, type, signature;
  std::vector<model::InputSpec> inputs;
  std::string inputs_from;  // "--input", "papaya.json", "" (none)
  ts::ModuleTree tree;
  std::optional<Step> step;
};

// One forward and backward at args.batch on synthetic inputs, the forward
// recorded.
Step run_step(const InspectArgs& args, ts::Archive& archive, const std::vector<model::InputSpec>& inputs) {
  if (inputs.empty()) {
    throw InputError("inspect " + args.archive +
                     " --batch: the forward's inputs are needed (--input, or the archive's papaya.json)");
  }
  std::optional<ts::LossKind> asked;
  if (!args.loss.empty()) asked = ts::parse_loss_kind(args.loss, "--loss");
  const ts::RecordedStep recorded = ts::record_step(archive, inputs, args.batch, asked, profiler::is_out_of_memory);
  return {args.batch, ts::to_string(recorded.loss), recorded.saved};
}

std::string role(const ts::ModuleNode& m) {
  if (m.calls == 0) return "not called";
  std::string out = m.segment ? "segment" : "";
  if (m.layer) out += std::string(out.empty() ? "" : ", ") + "layer";
  return out.empty() ? "calls its children" : out;
}

std::string shown_path(const ts::ModuleNode& m) { return m.path.empty() ? "(top)" : m.path; }

void to_json(nlohmann::json& out, const Inspection& r) {
  nlohmann::json modules = nlohmann::json::array();
  for (const auto& m : r.tree.modules) {
    modules.push_back({{"path", m.path},
                       {"type", m.type},
                       {"parameters", m.parameters},
                       {"calls", m.calls},
                       {"ops", m.own_ops},
                       {"layer", m.layer},
                       {"segment", m.segment}});
    if (r.step) {
      const auto it = r.step->saved.by_module.find(m.path);
      modules.back()["saved_bytes"] = it == r.step->saved.by_module.end() ? 0 : it->second;
    }
  }
  nlohmann::json inputs = nlohmann::json::array();
  for (const auto& spec : r.inputs) inputs.push_back(spec.text());
  out = {{"archive", r.path},
         {"type", r.type},
         {"forward", r.signature},
         {"inputs", inputs},
         {"inputs_from", r.inputs_from.empty() ? nlohmann::json() : nlohmann::json(r.inputs_from)},
         {"parameters", r.tree.parameters},
         {"layers", r.tree.layers()},
         {"segments", r.tree.segments()},
         {"modules", modules}};
  if (r.step) {
    out["step"] = {{"batch", r.step->batch},
                   {"loss", r.step->loss},
                   {"saved_bytes", r.step->saved.total()},
                   {"saved_tensors", r.step->saved.tensors}};
  }
}

void print_text(std::ostream& out, const Inspection& r) {
  const int64_t n = r.tree.parameters;
  out << "papaya inspect: " << r.path << " (TorchScript " << r.type << "), "
      << (n < 1000 ? std::to_string(n) : model::format_si(static_cast<double>(n)) + " (" + std::to_string(n) + ")")
      << " parameters, " << r.tree.layers() << " layers, " << r.tree.segments() << " segments\n"
      << r.signature << "\n";
  if (r.inputs.empty()) {
    out << "inputs: none given: pass --input per argument (e.g. --input 'float32[B,3,224,224]') or save them in the "
           "archive's papaya.json\n";
  } else {
    std::string specs;
    for (const auto& spec : r.inputs) specs += (specs.empty() ? "" : ", ") + spec.text();
    out << "inputs (" << r.inputs_from << "): " << specs << "\n";
  }
  if (r.step) {
    out << "one step at batch " << r.step->batch << " (loss: " << r.step->loss
        << "): " << model::format_bytes(static_cast<double>(r.step->saved.total())) << " saved for backward in "
        << r.step->saved.tensors << " tensors\n";
  }
  std::vector<std::string> header = {"module", "type", "parameters", "calls", "treated as"};
  if (r.step) header.push_back("saved");
  header.push_back("own ops");
  Table table(header);
  for (const auto& m : r.tree.modules) {
    std::string ops;
    for (const auto& op : m.own_ops) ops += (ops.empty() ? "" : " ") + op.substr(op.find("::") + 2);
    std::vector<std::string> row = {shown_path(m), m.type, std::to_string(m.parameters), std::to_string(m.calls), role(m)};
    if (r.step) {
      const auto it = r.step->saved.by_module.find(m.path);
      row.push_back(it == r.step->saved.by_module.end() ? "-" : model::format_bytes(static_cast<double>(it->second)));
    }
    row.push_back(ops);
    table.add_row(row);
  }
  table.print(out);
  out << "layer: a module called with no child it calls, or with ops of its own; segment: a child of a Sequential or "
         "ModuleList, which a plan can recompute.\n";
}

Inspection inspect(const InspectArgs& args) {
  ts::Archive archive = ts::load_archive(args.archive);
  Inspection r;
  r.path = args.archive;
  r.type = archive.module.type()->name() ? archive.module.type()->name()->name() : "?";
  r.signature = ts::forward_signature(archive);
  r.inputs = ts::input_specs(archive, args.inputs, "--input");
  if (!r.inputs.empty()) r.inputs_from = args.inputs.empty() ? "papaya.json" : "--input";
  r.tree = ts::module_tree(archive.module, args.archive);
  if (args.batch > 0) r.step = run_step(args, archive, r.inputs);
  return r;
}

}  // namespace

void register_inspect(CLI::App& app) {
  auto args = std::make_shared<InspectArgs>();
  auto* cmd = app.add_subcommand("inspect",
                                 "Show what papaya makes of a TorchScript archive (torch.jit.save of a scripted or traced "
                                 "module): the forward's inputs, the module tree, its layers and segments.");
  cmd->add_option("archive", args->archive, "TorchScript archive (.pt)")->required();
  cmd->add_option("--input", args->inputs,
                  "The forward's inputs in order, one per argument: DTYPE[B,...] with B the batch, e.g. "
                  "'float32[B,3,224,224]', 'int64[B,128]<50257' (token ids below a bound); default: the archive's papaya.json");
  cmd->add_option("--batch,-b", args->batch,
                  "Run one training step at this batch on synthetic inputs and show what each module saves for backward")
      ->check(positive(args->batch));
  cmd->add_option("--loss", args->loss,
                  "With --batch: the loss made of the forward's output: output (a scalar), cross-entropy (logits [B, C] or "
                  "[B, T, V]), mse; default: from its shape");
  const auto output = add_output_options(cmd);
  cmd->callback([args, output] { show(inspect(*args), *output); });
}

}  // namespace papaya::cli
