// safetensors.h: read-only access to safetensors files: each file memory-mapped, its header
// (u64 LE length + JSON, possibly space-padded) parsed with Jansson into a table of tensors whose
// byte ranges are checked against the file, and a set of files (a checkpoint folder's every
// *.safetensors) searched by tensor name. Knows nothing about GPT-OSS: which tensors must exist
// and with which shapes is the weight loader's business.
#ifndef GE_MODEL_SAFETENSORS_H
#define GE_MODEL_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ST_MAX_DIMS 8

typedef enum {
  ST_BOOL,
  ST_U8,
  ST_I8,
  ST_F8_E4M3,
  ST_F8_E5M2,
  ST_I16,
  ST_U16,
  ST_F16,
  ST_BF16,
  ST_I32,
  ST_U32,
  ST_F32,
  ST_I64,
  ST_U64,
  ST_F64,
  ST_NUM_DTYPES,
} StDtype;

typedef struct {
  const char *name;
  StDtype dtype;
  int num_dims;
  int64_t shape[ST_MAX_DIMS];  // [num_dims]
  const void *data;            // [product(shape)] elements of dtype, inside the file's mapping
  size_t num_bytes;
  const char *path;  // the file it lives in
} StTensor;

typedef struct {
  char *path;
  void *map;  // the whole file, read-only
  size_t map_size;
  char *names;        // the tensor names, NUL-separated (StTensor.name points here)
  StTensor *tensors;  // [num_tensors] in header order
  int num_tensors;
} StFile;

typedef struct {
  StFile *files;  // [num_files] sorted by path
  int num_files;
  const StTensor **sorted;  // [num_tensors] every file's tensors sorted by name
  int num_tensors;
} StSet;

// "BF16" etc.; the element size in bytes.
const char *st_dtype_name(StDtype d);
size_t st_dtype_size(StDtype d);

// Maps path and parses its header. False with a message naming the file (and the tensor) for a
// file that cannot be opened, is truncated (shorter than its header or than a tensor's data
// range) or has a bad header (not JSON, unknown dtype, shape and data_offsets that disagree,
// overlapping ranges).
bool st_open(StFile *f, const char *path, char *err, size_t err_size);
void st_close(StFile *f);

// Opens every *.safetensors in dir (at least one). False with st_open's message, or one naming
// a tensor that two files both hold.
bool st_set_open(StSet *s, const char *dir, char *err, size_t err_size);
void st_set_close(StSet *s);

// The tensor called name in any of the set's files; NULL when none holds it.
const StTensor *st_set_find(const StSet *s, const char *name);

#endif
