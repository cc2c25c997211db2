// torch_names.h — PyTorch operator names as static strings for the rings.
//
// RecordFunction::name() points into PyTorch's operator registry for
// dispatcher operators (stable), but into the RecordFunction itself for
// record_function() labels and autograd nodes (gone when it ends, and its
// address is soon reused with other text). So every name is interned by its
// text, and a per-thread cache keyed by the pointer makes the common case a
// hash, a load and a string compare that proves the text is still the same.
#pragma once

#include <cstdint>
#include <cstring>

namespace ringprof::torch_operators {

inline constexpr size_t kMaxOpNames = 65536;  // distinct names; past it names travel inline

const char* intern_op_name_slow(const char* name);

struct NameCacheEntry {
  const char* key;
  const char* interned;
};
inline constexpr size_t kNameCacheSlots = 512;

// A static copy of `name`; the same pointer for the same text. Null past
// kMaxOpNames. `cache` is the calling thread's (kNameCacheSlots entries).
inline const char* op_name(NameCacheEntry* cache, const char* name) {
  NameCacheEntry& e = cache[(reinterpret_cast<uintptr_t>(name) >> 3) % kNameCacheSlots];
  if (e.key == name && std::strcmp(e.interned, name) == 0) [[likely]] return e.interned;
  const char* interned = intern_op_name_slow(name);
  if (interned) e = {name, interned};
  return interned;
}

}  // namespace ringprof::torch_operators
