// What each probe source file exports: a table of named variants and the C entry points through which
// bindings.cpp numbers them across the files (bindings.cpp checks 0 <= i < count() before it calls).
#pragma once

namespace bf16probe {
struct Entry {
  const char* name;
  int (*launch)(const void*, const void*, void*, int, int, int, void*, int);  // ..., grid (0: the launcher's)
  int (*resident)();
};
}  // namespace bf16probe

#define BF16_PROBE_EXPORTS(prefix, entries)                                                                \
  extern "C" int prefix##_count() { return (int)(sizeof(entries) / sizeof(entries[0])); }                 \
  extern "C" const char* prefix##_name(int i) { return entries[i].name; }                                 \
  extern "C" int prefix##_resident(int i) { return entries[i].resident(); }                               \
  extern "C" int prefix##_launch(int i, const void* A, const void* B, void* C, int M, int N, int K, void* stream, \
                                 int grid) {                                                               \
    return entries[i].launch(A, B, C, M, N, K, stream, grid);                                              \
  }
