#pragma once
// The MOM-aware forms of the layers: each an autograd Function whose forward
// computes what the layer's native path computes, with the same ATen ops, and
// stores each slot as the layer's StoreSpec says; whose backward restores the
// slots and calls the ATen backward kernels. Layers call these when a slot is
// not kept (Layer::uses_moms); tensors are the layer's inputs and its
// parameters as stored (computed_as casts them to the compute dtype).
#include <torch/torch.h>

namespace papaya::executor {

class Linear;
class Norm;
class BatchNorm2d;
class Activation;
class Dropout;
class Mul;
class AttentionScores;
class Softmax;
class AttentionContext;
class Conv2d;
class MaxPool2d;
class CrossEntropy;
class LMHead;

namespace moms {

torch::Tensor linear(const Linear& layer, const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);
torch::Tensor layer_norm(const Norm& layer, const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);
torch::Tensor rms_norm(const Norm& layer, const torch::Tensor& x, const torch::Tensor& weight);
torch::Tensor batch_norm(BatchNorm2d& layer, const torch::Tensor& x);
torch::Tensor activation(const Activation& layer, const torch::Tensor& x);
torch::Tensor dropout(const Dropout& layer, const torch::Tensor& x);
torch::Tensor mul(const Mul& layer, const torch::Tensor& a, const torch::Tensor& b);
torch::Tensor attention_scores(AttentionScores& layer, const torch::Tensor& q, const torch::Tensor& k);
torch::Tensor softmax(const Softmax& layer, const torch::Tensor& x);
torch::Tensor attention_context(const AttentionContext& layer, const torch::Tensor& probs, const torch::Tensor& v);
torch::Tensor conv2d(const Conv2d& layer, const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);
torch::Tensor max_pool2d(const MaxPool2d& layer, const torch::Tensor& x);
torch::Tensor cross_entropy(const CrossEntropy& layer, const torch::Tensor& logits, const torch::Tensor& target);
torch::Tensor lm_head(const LMHead& layer, const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& target);

}  // namespace moms
}  // namespace papaya::executor
