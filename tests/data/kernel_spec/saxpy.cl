// y = alpha * x + y over n elements (y read and written: an io buffer).
__kernel void saxpy(float alpha, __global const float* x, __global float* y, int n) {
    int i = get_global_id(0);
    if (i < n) {
        y[i] = alpha * x[i] + y[i];
    }
}
