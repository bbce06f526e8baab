// papaya inspect ARCHIVE: what papaya makes of a TorchScript archive — the
// forward's signature and inputs, the module tree with parameters and calls,
// and which modules it treats as layers and which as segments.
#include "cli/commands.h"
#include "cli/report.h"
#include "cli/table.h"
#include "executor/torchscript/archive.h"
#include "executor/torchscript/module_tree.h"
#include "model/units.h"

namespace papaya::cli {
namespace {

namespace ts = executor::torchscript;

struct InspectArgs {
  std::string archive;
  std::vector<std::string> inputs;
};

struct Inspection {
  std::string path, type, signature;
  std::vector<model::InputSpec> inputs;
  std::string inputs_from;  // "--input", "papaya.json", "" (none)
  ts::ModuleTree tree;
};

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
  Table table({"module", "type", "parameters", "calls", "treated as", "own ops"});
  for (const auto& m : r.tree.modules) {
    std::string ops;
    for (const auto& op : m.own_ops) ops += (ops.empty() ? "" : " ") + op.substr(op.find("::") + 2);
    table.add_row({shown_path(m), m.type, std::to_string(m.parameters), std::to_string(m.calls), role(m), ops});
  }
  table.print(out);
  out << "layer: a module called with no child it calls, or with ops of its own; segment: a child of a Sequential or "
         "ModuleList, which a plan can recompute.\n";
}

Inspection inspect(const InspectArgs& args) {
  const ts::Archive archive = ts::load_archive(args.archive);
  Inspection r;
  r.path = args.archive;
  r.type = archive.module.type()->name() ? archive.module.type()->name()->name() : "?";
  r.signature = ts::forward_signature(archive);
  r.inputs = ts::input_specs(archive, args.inputs, "--input");
  if (!r.inputs.empty()) r.inputs_from = args.inputs.empty() ? "papaya.json" : "--input";
  r.tree = ts::module_tree(archive.module, args.archive);
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
  const auto output = add_output_options(cmd);
  cmd->callback([args, output] { show(inspect(*args), *output); });
}

}  // namespace papaya::cli
