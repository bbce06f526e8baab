#pragma once
// Networks too large to profile whole: a transformer's blocks are identical
// but for their kind (their attention's window: Gemma's local and global
// blocks; an MLP or a mixture of experts: DeepSeek-V3's), so `papaya
// profile --profile-blocks K` measures the network built with its first K
// blocks, every kind among them, and the model fitted to
// that profile is made the model of all N here. Each block past the K-th
// takes its layers' times and costs from the last profiled block of its kind,
// and each memory figure from the K-th block's plus what one more block
// holds (the K-th block's start less the (K-1)-th's) for each block in
// between; where a block's backward meets the next block (not the layers
// after the blocks) the gap is the (K-1)-th's. The layers after the blocks
// hold the N - K blocks more, and every figure the whole network's weights,
// gradients and optimizer state.
#include <string>
#include <vector>

#include "model/layer_model.h"

namespace papaya::model {

// Blocks are the layers under "blocks.<i>."; `profiled` has blocks 0..K-1
// (K >= 2: two give what one more block holds), `static_bytes`: the whole
// network's weights, gradients and optimizer state; `kinds`: each of the
// `blocks` blocks' kind (model::block_kinds), or empty where all are alike.
// Blocks before the last two profiled may hold other layers (DeepSeek-V3's
// dense blocks before its mixtures); every block past them copies the last
// one's layers. Throws InputError, `label` first, if the model's layers are
// not K runs of blocks with the last two alike, or a kind of block past the
// K is not among them or holds other layers than the last.
LayerModel scale_blocks(const LayerModel& profiled, int blocks, double static_bytes, const std::vector<int>& kinds,
                        const std::string& label);

// How many blocks a model's layers hold (0 if none).
int block_count(const LayerModel& model);

}  // namespace papaya::model
