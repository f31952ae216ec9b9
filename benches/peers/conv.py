"""PyTorch peer of benches/conv.rs on a CUDA GPU: one-channel conv2d (cuDNN, fp32, TF32 off) of a
CONV_SIZE^2 image (default 4096) with 7x7 and 31x31 filters, padding (m - 1) / 2 (mode `same`),
and conv1d of 2^CONV_LOG2 points with 31 taps; CUDA events, median of 20 after warm-up.

Note: PyTorch's conv is a correlation; the timing is the same as a convolution's."""
import os
import torch

torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
dev = "cuda"


def median_ms(f, reps=20):
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        f()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


s = int(os.environ.get("CONV_SIZE", "4096"))
n = 1 << int(os.environ.get("CONV_LOG2", "22"))
print(f"PyTorch {torch.__version__}, {torch.cuda.get_device_name()}")
x1 = torch.rand(1, 1, n, device=dev) * 2 - 1
k1 = torch.rand(1, 1, 31, device=dev) * 2 - 1
t = median_ms(lambda: torch.nn.functional.conv1d(x1, k1, padding=15))
print(f"conv1d [{n}] * 31: {t * 1e3:.1f} us")
img = torch.rand(1, 1, s, s, device=dev) * 2 - 1
for m in (7, 31):
    k = torch.rand(1, 1, m, m, device=dev) * 2 - 1
    t = median_ms(lambda: torch.nn.functional.conv2d(img, k, padding=(m - 1) // 2))
    print(f"conv2d {s}^2 * {m}x{m}: {t * 1e3:.1f} us")
t = median_ms(lambda: img + 0.0)
print(f"device copy {s}^2: {t * 1e3:.1f} us")
