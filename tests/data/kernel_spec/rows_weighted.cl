#pragma OPENCL EXTENSION cl_khr_fp64 : enable
// out[i][j] = m[i][j] * w[j] + bias: a 2-D launch over rows x cols; `w` is read whole by every
// work item row (not splittable), `m` and `out` by rows.
__kernel void rows_weighted(__global const double* m, __global const double* w,
                            __global double* out, double bias, uint cols) {
    size_t i = get_global_id(0);
    size_t j = get_global_id(1);
    out[i * cols + j] = m[i * cols + j] * w[j] + bias;
}
