#include "profiler/cupti_activity.h"

#include <cupti.h>

#include <cstddef>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>

namespace papaya::profiler::cupti {
namespace {

// The record structs that CUPTI emits are renamed whenever fields are added
// (CUpti_ActivityKernel4 ... 10). Only the common leading fields are read
// here: the newest struct of the CUDA version compiled against, checked where
// the headers allow it to lay those fields out as the oldest one still
// declared does (which is what older CUPTIs emit).
#if CUDA_VERSION >= 13000
using KernelRecord = CUpti_ActivityKernel10;
using MemcpyRecord = CUpti_ActivityMemcpy6;
static_assert(offsetof(KernelRecord, start) == offsetof(CUpti_ActivityKernel4, start) &&
                  offsetof(KernelRecord, end) == offsetof(CUpti_ActivityKernel4, end) &&
                  offsetof(KernelRecord, correlationId) == offsetof(CUpti_ActivityKernel4, correlationId),
              "kernel records no longer share their leading fields");
static_assert(offsetof(MemcpyRecord, start) == offsetof(CUpti_ActivityMemcpy, start) &&
                  offsetof(MemcpyRecord, end) == offsetof(CUpti_ActivityMemcpy, end) &&
                  offsetof(MemcpyRecord, correlationId) == offsetof(CUpti_ActivityMemcpy, correlationId),
              "memcpy records no longer share their leading fields");
#else
using KernelRecord = CUpti_ActivityKernel4;
using MemcpyRecord = CUpti_ActivityMemcpy;
#endif

constexpr size_t buffer_bytes = 8 << 20;
constexpr size_t record_alignment = 8;  // ACTIVITY_RECORD_ALIGNMENT in CUPTI's samples

std::mutex mutex;
Records recorded;  // guarded by mutex
thread_local bool pushed = false;

void check(CUptiResult result, const char* call) {
  if (result == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  throw std::runtime_error(std::string("CUPTI ") + call + ": " + (text ? text : "unknown error"));
}

void add(const CUpti_Activity* record) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const KernelRecord*>(record);
      recorded.activities.push_back({k->correlationId, k->start, k->end});
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const MemcpyRecord*>(record);
      recorded.activities.push_back({m->correlationId, m->start, m->end});
      break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
      recorded.correlations.push_back({e->correlationId, e->externalId});
      break;
    }
    default: break;
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(record_alignment, buffer_bytes));
  *size = *buffer ? buffer_bytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid_bytes, &record) == CUPTI_SUCCESS) add(record);
  }
  std::free(buffer);
}

// CUPTI writes an external correlation record only for a runtime or driver
// API call it records: those two kinds are on for that alone (their records
// are dropped).
constexpr CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_RUNTIME,
                                        CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                        CUPTI_ACTIVITY_KIND_MEMCPY};

}  // namespace

void start() {
  // Once per process: the callbacks stay registered across recordings.
  static const CUptiResult registered = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  check(registered, "cuptiActivityRegisterCallbacks");
  for (CUpti_ActivityKind kind : kinds) check(cuptiActivityEnable(kind), "cuptiActivityEnable");
}

void stop() {
  for (CUpti_ActivityKind kind : kinds) cuptiActivityDisable(kind);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(mutex);
  recorded = Records{};
}

Records take() {
  check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  std::lock_guard<std::mutex> lock(mutex);
  Records out = std::move(recorded);
  recorded = Records{};
  return out;
}

void set_external_id(uint64_t id) {
  uint64_t last = 0;
  if (pushed) check(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last), "pop external id");
  pushed = id != 0;
  if (pushed) check(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id), "push external id");
}

}  // namespace papaya::profiler::cupti
