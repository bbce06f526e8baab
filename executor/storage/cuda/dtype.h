#pragma once
/* The element types the fused kernels read and write (quantize.h, invert.h). */
enum papaya_dtype { papaya_float32 = 0, papaya_bfloat16 = 1 };
