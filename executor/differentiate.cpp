#include "executor/differentiate.h"

#include <torch/csrc/autograd/engine.h>

namespace papaya::executor {

torch::autograd::Edge graph_of(const torch::Tensor& output) { return torch::autograd::impl::gradient_edge(output); }

void differentiate(const torch::autograd::Edge& root, const torch::Tensor& output_grad) {
  torch::autograd::Engine::get_default_engine().execute({root}, {output_grad}, /*keep_graph=*/false, /*create_graph=*/false,
                                                        /*accumulate_grad=*/true, /*outputs=*/{});
}

}  // namespace papaya::executor
