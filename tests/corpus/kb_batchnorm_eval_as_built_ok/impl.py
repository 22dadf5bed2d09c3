# expect: clean
# class: a batch norm put in eval mode as built, as the reference's is: running statistics in training mode too
# (the module's own mode as built is what the training-mode variant calls, not every submodule switched to training)
# kernel-lsp: reference=problem.py
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _bn_relu_kernel(x_ptr, mean_ptr, var_ptr, w_ptr, b_ptr, out_ptr, rows, cols, eps, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    m = c < cols
    x = tl.load(x_ptr + r * cols + c, mask=m)
    mean = tl.load(mean_ptr + c, mask=m)
    var = tl.load(var_ptr + c, mask=m, other=1.0)
    y = (x - mean) / tl.sqrt(var + eps) * tl.load(w_ptr + c, mask=m) + tl.load(b_ptr + c, mask=m)
    tl.store(out_ptr + r * cols + c, tl.where(y < 0.0, 0.0, y), mask=m)  # NaN stays NaN, as torch.relu keeps it


class ModelNew(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.bn = nn.BatchNorm1d(channels)
        self.bn.eval()
        with torch.no_grad():
            self.bn.running_mean.normal_()
            self.bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.bn.training:  # batch statistics (never, as built): PyTorch's own
            return torch.relu(self.bn(x))
        xc = x.contiguous()
        rows, cols = xc.shape
        out = torch.empty_like(xc)
        _bn_relu_kernel[(rows,)](xc, self.bn.running_mean, self.bn.running_var, self.bn.weight, self.bn.bias, out,
                                 rows, cols, self.bn.eps, BLOCK=triton.next_power_of_2(cols))
        return out
