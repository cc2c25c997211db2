// The CUPTI functions ringprof calls, as a table of pointers. libringprof
// never links libcupti (or libcuda): the table is filled by dlopen/dlsym at
// run time, so a build with CUPTI support still starts on a machine without
// a GPU or a driver. Tests fill the table with fakes instead.
#pragma once

#include <cupti.h>

namespace ringprof::cupti {

struct Api {
  CUptiResult (*GetVersion)(uint32_t*) = nullptr;
  CUptiResult (*GetResultString)(CUptiResult, const char**) = nullptr;
  CUptiResult (*ActivityRegisterCallbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) = nullptr;
  CUptiResult (*ActivityRegisterTimestampCallback)(CUpti_TimestampCallbackFunc) = nullptr;
  CUptiResult (*ActivityEnable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*ActivityDisable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*ActivityFlushAll)(uint32_t) = nullptr;
  CUptiResult (*ActivityFlushPeriod)(uint32_t) = nullptr;              // optional
  CUptiResult (*ActivityGetNextRecord)(uint8_t*, size_t, CUpti_Activity**) = nullptr;
  CUptiResult (*ActivityGetNumDroppedRecords)(CUcontext, uint32_t, size_t*) = nullptr;
  CUptiResult (*ActivityEnableRuntimeApi)(CUpti_CallbackId, uint8_t) = nullptr;  // optional
  CUptiResult (*ActivityEnableDriverApi)(CUpti_CallbackId, uint8_t) = nullptr;   // optional
  CUptiResult (*SetThreadIdType)(CUpti_ActivityThreadIdType) = nullptr;          // optional
  CUptiResult (*GetCallbackName)(CUpti_CallbackDomain, uint32_t, const char**) = nullptr;
};

}  // namespace ringprof::cupti
