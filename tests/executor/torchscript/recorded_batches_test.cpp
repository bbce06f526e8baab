// Batches a user saved for their TorchScript network (torch.save's format,
// written here by torch::pickle_save): read, checked against the forward's
// input specs, and served row by row through the data source.
#include "executor/torchscript/recorded_batches.h"

#include <gtest/gtest.h>
#include <torch/serialize.h>

#include <fstream>

#include "executor/data.h"
#include "executor/torchscript/imported_network.h"
#include "model/error.h"
#include "tests/cli/run_papaya.h"
#include "tests/executor/torchscript/fixtures.h"

namespace papaya::executor::torchscript {
namespace {

const std::vector<model::InputSpec> image_spec{model::parse_input_spec("float32[B,3,8,8]", "test")};

const papaya::testing::TempDir files("papaya-recorded");

std::string write(const std::string& name, const torch::IValue& value) {
  const std::string path = files.path(name + ".pt");
  const std::vector<char> bytes = torch::pickle_save(value);
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

torch::IValue batches(const std::vector<std::vector<at::Tensor>>& list) {
  c10::impl::GenericList out(c10::AnyType::get());
  for (const auto& batch : list)
    out.push_back(c10::ivalue::Tuple::create(std::vector<torch::IValue>(batch.begin(), batch.end())));
  return out;
}

std::string error_of(const std::string& path, const std::vector<model::InputSpec>& specs = image_spec) {
  try {
    load_recorded_batches(path, specs);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(RecordedBatches, BatchesAreJoinedIntoRowsAndServedInOrderCycled) {
  const at::Tensor x0 = torch::randn({3, 3, 8, 8}), x1 = torch::randn({2, 3, 8, 8});
  const at::Tensor y0 = torch::tensor({1, 2, 3}, at::kLong), y1 = torch::tensor({4, 5}, at::kLong);
  const std::string path = write("rows", batches({{x0, y0}, {x1, y1}}));
  const RecordedBatches recorded = load_recorded_batches(path, image_spec);
  EXPECT_EQ(recorded.batches, 2);
  EXPECT_EQ(recorded.rows, 5);
  ASSERT_EQ(recorded.arguments.size(), 1u);
  const at::Tensor x = at::cat({x0, x1}), y = at::cat({y0, y1});
  EXPECT_TRUE(at::equal(recorded.arguments[0], x));
  EXPECT_TRUE(at::equal(recorded.target, y));

  const std::string cnn = files.path("cnn.pt");
  testing::small_cnn().save(cnn);
  const auto config = archive_config(cnn, {"float32[B,3,8,8]"}, "--input", std::nullopt);
  auto data = make_file_data(path, config, torch::kCPU, 0);
  EXPECT_NE(data->describe().find("2 batches, 5 rows, with targets"), std::string::npos) << data->describe();
  const Batch first = data->next(4);
  EXPECT_TRUE(at::equal(first.input, x.narrow(0, 0, 4)));
  EXPECT_TRUE(at::equal(first.target, y.narrow(0, 0, 4)));
  const torch::Tensor position = data->position();
  const at::Tensor wrapped = torch::tensor({4, 0, 1, 2}, at::kLong);
  EXPECT_TRUE(at::equal(data->next(4).input, x.index_select(0, wrapped)));
  data->seek(position);  // a resumed run reads on from where the saved one stopped
  EXPECT_TRUE(at::equal(data->next(4).target, y.index_select(0, wrapped)));
}

TEST(RecordedBatches, ABareTensorIsABatchOfOneArgumentWithoutTarget) {
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(torch::randn({2, 3, 8, 8}));
  const RecordedBatches recorded = load_recorded_batches(write("bare", list), image_spec);
  EXPECT_EQ(recorded.rows, 2);
  EXPECT_FALSE(recorded.target.defined());
}

TEST(RecordedBatches, WhatDiffersFromTheForwardsInputsIsNamed) {
  const std::string text = files.path("text.pt");
  std::ofstream(text) << "not a pickle";
  EXPECT_NE(error_of(text).find("not a file torch.save wrote"), std::string::npos) << error_of(text);
  EXPECT_EQ(error_of("/nonexistent/d.pt"), "data file /nonexistent/d.pt: cannot read the file");

  const std::string tensor = write("tensor", torch::randn({2, 3, 8, 8}));
  EXPECT_EQ(error_of(tensor), "data file " + tensor + ": holds a Tensor, not a list of batches");
  const std::string dtype = write("dtype", batches({{torch::zeros({2, 3, 8, 8}, at::kDouble)}}));
  EXPECT_EQ(error_of(dtype),
            "data file " + dtype + ": batch 0, argument 0: Double[2, 3, 8, 8], the forward's is float32[B,3,8,8]");
  const std::string shape = write("shape", batches({{torch::zeros({2, 3, 8, 8})}, {torch::zeros({2, 3, 4, 4})}}));
  EXPECT_EQ(error_of(shape),
            "data file " + shape + ": batch 1, argument 0: Float[2, 3, 4, 4], the forward's is float32[B,3,8,8]");
  const std::string target =
      write("target", batches({{torch::zeros({2, 3, 8, 8}), torch::zeros({2}, at::kLong)}, {torch::zeros({2, 3, 8, 8})}}));
  EXPECT_EQ(error_of(target), "data file " + target + ": batch 1: no target, where batch 0 has one");
  const std::string rows = write("rows-target", batches({{torch::zeros({2, 3, 8, 8}), torch::zeros({3}, at::kLong)}}));
  EXPECT_EQ(error_of(rows), "data file " + rows + ": batch 0, target: [3], not one row for each of the batch's 2");
  const std::string many = write("many", batches({{torch::zeros({2, 3, 8, 8}), torch::zeros({2}), torch::zeros({2})}}));
  EXPECT_EQ(error_of(many), "data file " + many + ": batch 0: 3 tensors; the forward takes 1 (and a target may follow)");

  const std::vector<model::InputSpec> tokens{model::parse_input_spec("int64[B,4]<10", "test")};
  const std::string bound = write("bound", batches({{torch::tensor({{1, 2, 3, 10}}, at::kLong)}}));
  EXPECT_EQ(error_of(bound, tokens),
            "data file " + bound + ": batch 0, argument 0: values span [1, 10], outside [0, 10) of int64[B,4]<10");
}

}  // namespace
}  // namespace papaya::executor::torchscript
