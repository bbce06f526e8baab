#pragma once
// Loading a TorchScript archive with LibTorch, whose loader can crash on a
// damaged archive (a segfault parsing its code, a free of what it never
// allocated, as fuzzing found): the load is tried in a child process first,
// so that a crash there is an InputError here, not papaya's end.
#include <sys/types.h>
#include <torch/script.h>

#include <string>

namespace papaya::executor::torchscript {

// `path` loaded on the CPU, with the extra files named in `extra`. InputError
// naming the file where LibTorch's loader crashes on it (in the child) or
// refuses it. Each version of a file that loads is tried apart once.
torch::jit::Module load_module(const std::string& path, torch::jit::ExtraFilesMap& extra);

// Whether process `pid` can never go on: it has one thread, and that thread
// waits on a futex (no thread of its own is left to wake it). A child forked
// while another thread held a lock (a sanitizer's allocator, as fuzzing
// found) waits so at the lock's first use. False where /proc does not say.
bool waits_forever(pid_t pid);

}  // namespace papaya::executor::torchscript
