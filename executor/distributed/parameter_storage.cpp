#include "executor/distributed/parameter_storage.h"

namespace papaya::executor {
namespace {

int64_t bytes_of(const torch::Tensor& t) { return t.numel() * static_cast<int64_t>(t.element_size()); }

void resize_storage(const torch::Tensor& parameter, int64_t bytes) {
  c10::StorageImpl* storage = parameter.storage().unsafeGetStorageImpl();
  // A tensor loaded from a TorchScript archive has a storage without an
  // allocator (its bytes came from the archive's reader): the device's then.
  c10::Allocator* allocator = storage->allocator() ? storage->allocator() : c10::GetAllocator(parameter.device().type());
  storage->set_data_ptr_noswap(allocator->allocate(static_cast<size_t>(bytes)));
  storage->set_nbytes(static_cast<size_t>(bytes));
}

}  // namespace

bool owns_its_storage(const torch::Tensor& parameter) {
  return parameter.is_contiguous() && parameter.storage_offset() == 0 &&
         static_cast<int64_t>(parameter.storage().nbytes()) == bytes_of(parameter);
}

void let_go_of_storage(const torch::Tensor& parameter) { resize_storage(parameter, 0); }

void give_storage_back(const torch::Tensor& parameter) { resize_storage(parameter, bytes_of(parameter)); }

bool storage_let_go(const torch::Tensor& parameter) { return parameter.numel() > 0 && parameter.storage().nbytes() == 0; }

}  // namespace papaya::executor
