#include "executor/distributed/collectives.h"

#ifdef PAPAYA_GLOO
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif
#ifdef PAPAYA_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <thread>

#include "model/error.h"

namespace papaya::executor {

#ifdef PAPAYA_GLOO
struct Collectives::Group {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;  // CPU tensors
#ifdef PAPAYA_NCCL
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;  // CUDA tensors
#endif
  // `call` on the group the job uses: the two share their collectives'
  // signatures (1.13's ProcessGroup, 2.x's Backend), not a base class.
  template <typename Call>
  c10::intrusive_ptr<c10d::Work> run(Call call) {
#ifdef PAPAYA_NCCL
    if (nccl) return call(*nccl);
#endif
    return call(*gloo);
  }
};

namespace {

std::string rank_of(const World& world) { return "rank " + std::to_string(world.rank) + " of " + std::to_string(world.size); }

// c10d's errors (a peer's socket closed, a timeout) end the job with one line.
void wait_for(const c10::intrusive_ptr<c10d::Work>& work, const World& world, const char* what) {
  try {
    work->wait();
  } catch (const std::exception& e) {
    const std::string message = e.what();
    throw InputError(rank_of(world) + ": " + what +
                     " failed (a rank has gone or is too slow): " + message.substr(0, message.find('\n')));
  }
}

// A finished collective let go of here: its worker thread drops its own
// reference a moment after the wait ends, and had it dropped the last, the
// tensors the collective held would be freed on that thread, where this
// thread's memory report does not see them go.
void release(c10::intrusive_ptr<c10d::Work>& work) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (work.use_count() > 1 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  work.reset();
}

template <typename Run>
void collective(const World& world, const char* what, Run run) {
  c10::intrusive_ptr<c10d::Work> work;
  try {
    work = run();
  } catch (const std::exception& e) {
    const std::string message = e.what();
    throw InputError(rank_of(world) + ": " + what + " failed: " + message.substr(0, message.find('\n')));
  }
  wait_for(work, world, what);
  release(work);
}

}  // namespace

Collectives::Collectives(const World& world, std::chrono::milliseconds timeout, torch::Device device)
    : world_(world), device_(device), timeout_(timeout), group_(new Group) {
#ifndef PAPAYA_NCCL
  if (device.is_cuda()) {
    throw InputError(rank_of(world) +
                     ": this papaya is built without NCCL (LibTorch with CUDA and nccl.h): no "
                     "data-parallel training on " +
                     device.str());
  }
#endif
  const std::string joining = "joining the job at " + world.master_addr + ":" + std::to_string(world.master_port);
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<uint16_t>(world.master_port);
    options.isServer = world.rank == 0;
    options.numWorkers = world.size;
    options.waitWorkers = true;
    options.timeout = timeout;
    group_->store = c10::make_intrusive<c10d::TCPStore>(world.master_addr, options);
  } catch (const std::exception& e) {
    const std::string message = e.what();
    throw InputError(rank_of(world) + ": " + joining + " failed: " + message.substr(0, message.find('\n')));
  }
  open(joining);
}

Collectives::Collectives(Collectives& job, const std::string& name, int rank, int size)
    : world_{rank, size, job.world_.local_rank, job.world_.master_addr, job.world_.master_port},
      device_(job.device_),
      timeout_(job.timeout_),
      group_(new Group) {
  group_->store = c10::make_intrusive<c10d::PrefixStore>(name, job.group_->store);
  open("joining the group " + name + " of rank " + std::to_string(job.world_.rank) + " of " + std::to_string(job.world_.size));
}

void Collectives::open(const std::string& joining) {
  try {
#ifdef PAPAYA_NCCL
    if (device_.is_cuda()) {
      c10::cuda::set_device(device_.index());  // NCCL's communicator is the current device's
      auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
      nccl_options->timeout = timeout_;
      group_->nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(group_->store, world_.rank, world_.size, nccl_options);
      return;
    }
#endif
    auto gloo_options = c10d::ProcessGroupGloo::Options::create(timeout_);
    gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(world_.master_addr));
    group_->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(group_->store, world_.rank, world_.size, gloo_options);
  } catch (const std::exception& e) {
    const std::string message = e.what();
    throw InputError(rank_of(world_) + ": " + joining + " failed: " + message.substr(0, message.find('\n')));
  }
}

Collectives::~Collectives() = default;

void Collectives::allreduce_sum(std::vector<torch::Tensor>& tensors) {
  collective(world_, "allreduce", [&] { return group_->run([&](auto& group) { return group.allreduce(tensors); }); });
}

Collectives::Pending Collectives::start_allreduce_sum(std::vector<torch::Tensor>& tensors) {
  auto work = group_->run([&](auto& group) { return group.allreduce(tensors); });
  return Pending([work, world = world_]() mutable {
    if (!work) return;  // waited for already
    wait_for(work, world, "allreduce");
    release(work);
  });
}

void Collectives::allreduce_max(std::vector<torch::Tensor>& tensors) {
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp::MAX;
  collective(world_, "allreduce", [&] { return group_->run([&](auto& group) { return group.allreduce(tensors, options); }); });
}

void Collectives::broadcast(std::vector<torch::Tensor>& tensors, int root) {
  c10d::BroadcastOptions options;
  options.rootRank = root;
  collective(world_, "broadcast", [&] { return group_->run([&](auto& group) { return group.broadcast(tensors, options); }); });
}

Collectives::Pending Collectives::start_reduce_sum(std::vector<torch::Tensor>& tensors, int root) {
  c10d::ReduceOptions options;
  options.rootRank = root;
  auto work = group_->run([&](auto& group) { return group.reduce(tensors, options); });
  return Pending([work, world = world_]() mutable {
    if (!work) return;  // waited for already
    wait_for(work, world, "reduce");
    release(work);
  });
}

Collectives::Pending Collectives::start_send(std::vector<torch::Tensor>& tensors, int to, int tag) {
  auto work = group_->run([&](auto& group) { return group.send(tensors, to, tag); });
  return Pending([work, world = world_]() mutable {
    if (!work) return;  // waited for already
    wait_for(work, world, "send");
    release(work);
  });
}

void Collectives::receive(std::vector<torch::Tensor>& tensors, int from, int tag) {
  collective(world_, "receive", [&] { return group_->run([&](auto& group) { return group.recv(tensors, from, tag); }); });
}

bool Collectives::available() { return true; }

bool Collectives::nccl_available() {
#ifdef PAPAYA_NCCL
  return true;
#else
  return false;
#endif
}

#else
struct Collectives::Group {};

bool Collectives::available() { return false; }

bool Collectives::nccl_available() { return false; }

Collectives::Collectives(const World& world, std::chrono::milliseconds timeout, torch::Device device)
    : world_(world), device_(device), timeout_(timeout) {
  throw InputError("rank " + std::to_string(world.rank) +
                   ": this papaya is built without Gloo (Debian's libgloo-dev): no data-parallel training");
}

// No job is made without Gloo, so neither is a group of its ranks.
Collectives::Collectives(Collectives& job, const std::string&, int rank, int size)
    : Collectives(World{rank, size}, job.timeout_, job.device_) {}

Collectives::~Collectives() = default;

void Collectives::allreduce_sum(std::vector<torch::Tensor>&) {}

void Collectives::allreduce_max(std::vector<torch::Tensor>&) {}

Collectives::Pending Collectives::start_allreduce_sum(std::vector<torch::Tensor>&) {
  return Pending([] {});
}

void Collectives::broadcast(std::vector<torch::Tensor>&, int) {}

Collectives::Pending Collectives::start_reduce_sum(std::vector<torch::Tensor>&, int) {
  return Pending([] {});
}

Collectives::Pending Collectives::start_send(std::vector<torch::Tensor>&, int, int) {
  return Pending([] {});
}

void Collectives::receive(std::vector<torch::Tensor>&, int, int) {}

#endif

double Collectives::mean(double value) {
  std::vector<torch::Tensor> t{torch::tensor({value}, torch::dtype(torch::kDouble).device(device_))};
  allreduce_sum(t);
  return t[0].item<double>() / world_.size;
}

std::vector<std::vector<double>> Collectives::gather(const std::vector<double>& values) {
  const int64_t n = static_cast<int64_t>(values.size());
  std::vector<torch::Tensor> table{torch::zeros({world_.size, n}, torch::dtype(torch::kDouble).device(device_))};
  table[0][world_.rank].copy_(torch::tensor(values, torch::kDouble));
  allreduce_sum(table);
  table[0] = table[0].cpu();
  std::vector<std::vector<double>> rows(static_cast<size_t>(world_.size));
  for (int r = 0; r < world_.size; ++r) {
    for (int64_t i = 0; i < n; ++i) rows[static_cast<size_t>(r)].push_back(table[0][r][i].item<double>());
  }
  return rows;
}

}  // namespace papaya::executor
