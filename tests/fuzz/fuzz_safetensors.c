// fuzz_safetensors.c: libFuzzer target for the safetensors header parser (st_open in
// engine/model/safetensors.c: the length prefix, the JSON header, dtypes, shapes, data offsets,
// overlaps). Input: a whole file, opened through a path (fuzz_util.h's in-memory file). A file
// that opens must have every tensor's bytes inside the mapping, after the header, with the size
// its dtype and shape give; a failure must name the file.
#include <string.h>

#include "fuzz_util.h"
#include "model/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_input_file(data, size);
  StFile f;
  char err[1024] = "";
  if (!st_open(&f, path, err, sizeof err)) {
    fuzz_require(strncmp(err, path, strlen(path)) == 0, "an error names the file");
    return 0;
  }
  const uint8_t *begin = f.map, *end = begin + f.map_size;
  for (int i = 0; i < f.num_tensors; i++) {
    const StTensor *t = &f.tensors[i];
    const uint8_t *at = t->data;
    fuzz_require(t->name && t->num_dims >= 0 && t->num_dims <= ST_MAX_DIMS, "name and dims");
    fuzz_require(at >= begin + 8 && at <= end && t->num_bytes <= (size_t)(end - at),
                 "tensor bytes inside the file");
    size_t bytes = st_dtype_size(t->dtype);
    for (int k = 0; k < t->num_dims; k++) bytes *= (size_t)t->shape[k];
    fuzz_require(bytes == t->num_bytes, "size from dtype and shape");
  }
  st_close(&f);
  return 0;
}
