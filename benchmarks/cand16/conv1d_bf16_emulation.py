"""conv1d with its two correction products in bf16, emulated on the CPU against the verifier's budget (docs/verification.md):
`python benchmarks/cand16/conv1d_bf16_emulation.py` prints, per input kind, each form's max error and its share of the
budget (benchmarks/cand16/README.md)."""
import torch, math
torch.manual_seed(0)
def tf32(v):  # round to nearest tf32 (emulate on fp32 bits)
    b = v.float().view(torch.int32)
    r = (b + 0x1000) & -8192
    return r.view(torch.float32)
def trunc_tf32(v):
    return (v.float().view(torch.int32) & -8192).view(torch.float32)
bf = lambda v: v.float().to(torch.bfloat16).double()
B, C, O, L, KS = 4, 64, 128, 2048, 5
def run(x, w, b):
    xd, wd, bd = x.double(), w.double(), b.double()
    truth = torch.nn.functional.conv1d(xd, wd, bd)
    ref = torch.nn.functional.conv1d(x, w, b).double()
    A = torch.nn.functional.conv1d(xd.abs(), wd.abs(), bd.abs())
    u = 2.0**-24
    S = truth.abs().max()
    E = (ref - truth).abs().max()
    budget = 3*E + 2*u*truth.abs() + u*S + 8*u*A
    xh = tf32(x); xl = tf32(x - xh)
    wh = trunc_tf32(w); wl = tf32(w - wh)
    c = lambda a, ww: torch.nn.functional.conv1d(a.double(), ww.double())
    cur = c(xh, wh) + c(xl, wh) + c(xh, wl) + bd[:, None]
    # mixed: main tf32, corrections in bf16
    mix = c(xh, wh) + c(bf(xl), bf(wh)) + c(bf(xh), bf(wl)) + bd[:, None]
    for name, y in (("3xtf32", cur), ("tf32+2bf16", mix), ("fp32 ref", ref)):
        err = (y - truth).abs()
        print(f"  {name:12s} max err {err.max():.3g}  max err/budget {(err/budget).max():.3f}  over {(err>budget).sum().item()}")
    print("  E_ref", float(E), "floor(8uA) mean", float((8*u*A).mean()))
w0 = (torch.rand(O, C, KS) * 2 - 1) / math.sqrt(C*KS); b0 = (torch.rand(O)*2-1)/math.sqrt(C*KS)
for kind, x in (("randn", torch.randn(B, C, L)), ("uniform pos", torch.rand(B, C, L)), ("big", torch.randn(B,C,L)*1e30),
                ("mixed scale", torch.randn(B,C,L)*torch.exp(torch.randn(B,C,L)*5)), ("const", torch.full((B,C,L), 1.2345678))):
    for wk, w in (("w", w0), ("w pos", w0.abs())):
        print(kind, wk); run(x, w, b0)
