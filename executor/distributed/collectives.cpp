#include "executor/distributed/collectives.h"

#ifdef PAPAYA_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif

#include "model/error.h"

namespace papaya::executor {

#ifdef PAPAYA_GLOO
struct Collectives::Group {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
};

namespace {

// c10d's errors (a peer's socket closed, a timeout) end the job with one line.
void wait_for(const c10::intrusive_ptr<c10d::Work>& work, const World& world, const char* what) {
  try {
    work->wait();
  } catch (const std::exception& e) {
    const std::string message = e.what();
    throw InputError("rank " + std::to_string(world.rank) + " of " + std::to_string(world.size) + ": " + what +
                     " failed (a rank has gone or is too slow): " + message.substr(0, message.find('\n')));
  }
}

template <typename Run>
void collective(const World& world, const char* what, Run run) {
  c10::intrusive_ptr<c10d::Work> work;
  try {
    work = run();
  } catch (const std::exception& e) {
    const std::string message = e.what();
    throw InputError("rank " + std::to_string(world.rank) + " of " + std::to_string(world.size) + ": " + what +
                     " failed: " + message.substr(0, message.find('\n')));
  }
  wait_for(work, world, what);
}

}  // namespace

Collectives::Collectives(const World& world, std::chrono::milliseconds timeout) : world_(world), group_(new Group) {
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<uint16_t>(world.master_port);
    options.isServer = world.rank == 0;
    options.numWorkers = world.size;
    options.waitWorkers = true;
    options.timeout = timeout;
    group_->store = c10::make_intrusive<c10d::TCPStore>(world.master_addr, options);
    auto gloo_options = c10d::ProcessGroupGloo::Options::create(timeout);
    gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(world.master_addr));
    group_->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(group_->store, world.rank, world.size, gloo_options);
  } catch (const std::exception& e) {
    const std::string message = e.what();
    throw InputError("rank " + std::to_string(world.rank) + " of " + std::to_string(world.size) + ": joining the job at " +
                     world.master_addr + ":" + std::to_string(world.master_port) +
                     " failed: " + message.substr(0, message.find('\n')));
  }
}

Collectives::~Collectives() = default;

void Collectives::allreduce_sum(std::vector<torch::Tensor>& tensors) {
  collective(world_, "allreduce", [&] { return group_->gloo->allreduce(tensors); });
}

Collectives::Pending Collectives::start_allreduce_sum(std::vector<torch::Tensor>& tensors) {
  const auto work = group_->gloo->allreduce(tensors);
  return Pending([work, world = world_] { wait_for(work, world, "allreduce"); });
}

void Collectives::allreduce_max(std::vector<torch::Tensor>& tensors) {
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp::MAX;
  collective(world_, "allreduce", [&] { return group_->gloo->allreduce(tensors, options); });
}

void Collectives::broadcast(std::vector<torch::Tensor>& tensors, int root) {
  c10d::BroadcastOptions options;
  options.rootRank = root;
  collective(world_, "broadcast", [&] { return group_->gloo->broadcast(tensors, options); });
}

bool Collectives::available() { return true; }

#else
struct Collectives::Group {};

bool Collectives::available() { return false; }

Collectives::Collectives(const World& world, std::chrono::milliseconds) : world_(world) {
  throw InputError("rank " + std::to_string(world.rank) +
                   ": this papaya is built without Gloo (Debian's libgloo-dev): no data-parallel training");
}

Collectives::~Collectives() = default;

void Collectives::allreduce_sum(std::vector<torch::Tensor>&) {}

void Collectives::allreduce_max(std::vector<torch::Tensor>&) {}

Collectives::Pending Collectives::start_allreduce_sum(std::vector<torch::Tensor>&) {
  return Pending([] {});
}

void Collectives::broadcast(std::vector<torch::Tensor>&, int) {}

#endif

}  // namespace papaya::executor
