"""Cases for the in-place optimizer steps adam_step and sgd_step: the
reference is torch.optim.Adam / AdamW / SGD (foreach=False, PyTorch 1.13's
single-tensor path) stepping one cloned tensor whose state is preset from the
case's inputs. Outputs are the updated tensors in the op's Inplace order
(param, exp_avg, exp_avg_sq[, max_exp_avg_sq]; param[, momentum_buffer]),
which is what the Go runtime returns for an in-place op.

f32, f64 and f16 cases compare bit for bit: the CPU kernels reproduce
PyTorch's rounding op by op. bf16 compares bit for bit where the element
count is a multiple of 32: PyTorch's vectorized loops handle 32 bf16
elements at a time and the last n mod 32 elements of each (per-thread) chunk
take a scalar path whose add(x, y, alpha) rounds alpha*y to bf16 before
adding, where the vector path fuses it in f32; the kernels follow the vector
path everywhere, so other bf16 cases compare at bf16 tolerance (atol one
bf16 ulp at 2, for state that cancels towards zero). PyTorch 1.13
has no CPU addcmul for f16, so f16 has SGD cases only. No case has gradients
(grad=False): the ops are in-place updates, not differentiable functions."""
import torch
from golden import case, T

G = "optim"


def adam_ref(lr, b1, b2, eps, wd, step, decoupled, amsgrad):
    def fn(p, g, m, v, vmax):
        p = p.clone()
        cls = torch.optim.AdamW if decoupled else torch.optim.Adam
        opt = cls([p], lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd, amsgrad=amsgrad, foreach=False)
        p.grad = g.clone()
        st = opt.state[p]
        st["step"] = torch.tensor(float(step - 1))
        st["exp_avg"] = m.clone()
        st["exp_avg_sq"] = v.clone()
        if amsgrad:
            st["max_exp_avg_sq"] = vmax.clone()
        opt.step()
        out = [p.detach(), st["exp_avg"], st["exp_avg_sq"]]
        if amsgrad:
            out.append(st["max_exp_avg_sq"])
        return out
    return fn


def sgd_ref(lr, momentum, dampening, wd, nesterov, first):
    def fn(p, g, buf):
        p = p.clone()
        opt = torch.optim.SGD([p], lr=lr, momentum=momentum, dampening=dampening, weight_decay=wd,
                              nesterov=nesterov, foreach=False)
        p.grad = g.clone()
        if momentum != 0 and not first:
            opt.state[p]["momentum_buffer"] = buf.clone()
        opt.step()
        out = [p.detach()]
        if momentum != 0:
            out.append(opt.state[p]["momentum_buffer"])
        return out
    return fn


def compare(dt, shape):
    """(compare, atol): bit for bit, or bf16 tolerance with an atol of one
    bf16 ulp at 2 for state that cancels towards zero."""
    n = 1
    for d in shape:
        n *= d
    return ("close", 1.6e-2) if dt == "bf16" and n % 32 else ("exact", None)


def adam_case(dt, shape, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, wd=0.0, step=1, decoupled=False, amsgrad=False,
              layout="contiguous", grad_kind="randn"):
    attrs = {"lr": lr, "beta1": b1, "beta2": b2, "eps": eps, "weight_decay": wd, "step": step,
             "decoupled": decoupled, "amsgrad": amsgrad}
    ins = [T(shape, dt, layout=layout), T(shape, dt, grad_kind), T(shape, dt, "unit"), T(shape, dt, "rand", layout=layout),
           T(shape, dt, "rand") if amsgrad else None]
    name = "adamw" if decoupled else "adam"
    cid = f"adam_step/{name},{dt}{'x'.join(map(str, shape))},step{step},wd{wd},lr{lr}" + (",ams" if amsgrad else "") + \
        ("" if layout == "contiguous" else "," + layout)
    case(G, "adam_step", adam_ref(lr, b1, b2, eps, wd, step, decoupled, amsgrad), ins, attrs, id=cid,
         compare=compare(dt, shape)[0], atol=compare(dt, shape)[1], grad=False)


def sgd_case(dt, shape, lr=0.1, momentum=0.0, dampening=0.0, wd=0.0, nesterov=False, first=False, layout="contiguous"):
    attrs = {"lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": wd, "nesterov": nesterov,
             "first": first}
    ins = [T(shape, dt, layout=layout), T(shape, dt), T(shape, dt, layout=layout) if momentum != 0 else None]
    cid = f"sgd_step/{dt}{'x'.join(map(str, shape))},lr{lr},mom{momentum},damp{dampening},wd{wd}" + \
        (",nesterov" if nesterov else "") + (",first" if first else "") + ("" if layout == "contiguous" else "," + layout)
    case(G, "sgd_step", sgd_ref(lr, momentum, dampening, wd, nesterov, first), ins, attrs, id=cid,
         compare=compare(dt, shape)[0], atol=compare(dt, shape)[1], grad=False)


for dt in ("f32", "f64", "bf16"):
    adam_case(dt, [3, 4])
    adam_case(dt, [3, 4], step=7, lr=0.01, b1=0.8, b2=0.9, eps=1e-6, wd=0.1)
    adam_case(dt, [5, 7], step=3, lr=0.01, amsgrad=True)
    adam_case(dt, [5, 7], step=1, lr=0.01, wd=0.01, decoupled=True)
    adam_case(dt, [2, 3, 4], step=1000, lr=0.02, wd=0.1, decoupled=True, amsgrad=True)
    sgd_case(dt, [3, 4])
    sgd_case(dt, [3, 4], momentum=0.9, first=True)
    sgd_case(dt, [5, 7], momentum=0.9)
    sgd_case(dt, [5, 7], lr=0.05, momentum=0.9, dampening=0.1, wd=0.01)
    sgd_case(dt, [2, 3, 4], lr=0.05, momentum=0.8, wd=0.1, nesterov=True)
# bf16 on whole 32-element vector blocks: bit for bit.
adam_case("bf16", [4, 32], step=5, lr=0.01, wd=0.1)
adam_case("bf16", [2, 64], step=3, lr=0.02, wd=0.1, decoupled=True, amsgrad=True)
sgd_case("bf16", [4, 32], lr=0.05, momentum=0.9, dampening=0.1, wd=0.01)
sgd_case("bf16", [2, 32], lr=0.05, momentum=0.8, wd=0.1, nesterov=True)
# f16: SGD only (see above).
sgd_case("f16", [3, 4], lr=0.05, momentum=0.9, dampening=0.1, wd=0.01)
sgd_case("f16", [5, 7], lr=0.05, momentum=0.8, wd=0.1, nesterov=True, first=True)
# In-place writes into transposed and strided layouts.
adam_case("f32", [4, 6], step=2, lr=0.01, amsgrad=True, layout="transposed")
adam_case("f32", [4, 6], step=2, lr=0.01, wd=0.01, decoupled=True, layout="strided")
sgd_case("f32", [4, 6], momentum=0.9, layout="transposed")
sgd_case("f32", [4, 6], momentum=0.9, wd=0.01, layout="strided")
# Many elements (the kernels' chunked loops), tiny gradients and zero state.
adam_case("f32", [8, 64], step=10, lr=3e-4, wd=0.01, decoupled=True)
adam_case("f32", [8, 32], step=1, lr=1e-3, grad_kind="edge")
sgd_case("f32", [8, 64], lr=0.01, momentum=0.9, wd=5e-4)
# Shape-rule errors.
case(G, "adam_step", None, [T([3, 4], "f32"), T([3, 5], "f32"), T([3, 4], "f32"), T([3, 4], "f32"), None],
     {"lr": 0.1, "step": 1}, error="must match")
case(G, "adam_step", None, [T([3, 4], "f32"), T([3, 4], "f32"), T([3, 4], "f32"), T([3, 4], "f32"), None],
     {"lr": 0.1, "step": 1, "amsgrad": True}, error="amsgrad needs max_exp_avg_sq")
case(G, "adam_step", None, [T([3, 4], "f32"), T([3, 4], "f32"), T([3, 4], "f32"), T([3, 4], "f32"), None],
     {"lr": 0.1, "step": 0}, error="step must be >= 1")
case(G, "sgd_step", None, [T([3, 4], "f32"), T([3, 4], "f32"), None], {"lr": 0.1, "momentum": 0.9},
     error="needs momentum_buffer")
case(G, "sgd_step", None, [T([3, 4], "f32"), T([3, 4], "f64"), None], {"lr": 0.1}, error="must match")
