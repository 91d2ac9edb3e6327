"""PTX instruction table: control flow, stack manipulation and miscellaneous instructions
(PTX ISA 9.7.12, 9.7.17, 9.7.19).

`{ }` (instruction grouping) and `@p` (predicated execution) are described in the control-flow
chapter but are syntax, not instructions: the parser handles them. An operand list in
parentheses (`call (r), f, (a, b);`) counts as one operand. Groups: `uni` (the branch or call is
known to be non-divergent), `idx` (brx's only form, .idx), `mask` (pmevent), and setmaxnreg's
`action`, `sync` and `aligned`.
"""

from __future__ import annotations

from ptxport.ptx.isa._base import Op, one

FLOW = "control flow"
STACK = "stack manipulation"
MISC = "miscellaneous"

UNI = one("uni")
ADDRESS = ("u32", "u64")

OPS: list[Op] = [
    # bra{.uni} tgt;
    Op("bra", FLOW, "control-flow-instructions-bra",
       groups={"uni": UNI}, operands=(1, 1), since=(1, 0)),
    # brx.idx{.uni} index, tlist;
    Op("brx", FLOW, "control-flow-instructions-brx-idx",
       groups={"idx": one("idx"), "uni": UNI}, operands=(2, 2), since=(6, 0)),
    # call{.uni} (ret-param), func, (param-list);  call{.uni} func, (param-list);  call{.uni} func;
    # call{.uni} (ret-param), fptr, (param-list), flist;  call{.uni} fptr, flist;  (...)
    # call{.uni} (ret-param), fptr, (param-list), fproto;  call{.uni} fptr, fproto;  (...)
    Op("call", FLOW, "control-flow-instructions-call",
       groups={"uni": UNI}, operands=(1, 4), since=(1, 0)),
    # ret{.uni};
    Op("ret", FLOW, "control-flow-instructions-ret",
       groups={"uni": UNI}, operands=(0, 0), since=(1, 0)),
    # exit;
    Op("exit", FLOW, "control-flow-instructions-exit", operands=(0, 0), since=(1, 0)),
    # stacksave.type d;  .type = {.u32, .u64}
    Op("stacksave", STACK, "stack-manipulation-instructions-stacksave",
       types=ADDRESS, operands=(1, 1), since=(7, 3)),
    # stackrestore.type a;  .type = {.u32, .u64}
    Op("stackrestore", STACK, "stack-manipulation-instructions-stackrestore",
       types=ADDRESS, operands=(1, 1), since=(7, 3)),
    # alloca.type ptr, size{, immAlign};  .type = {.u32, .u64}
    Op("alloca", STACK, "stack-manipulation-instructions-alloca",
       types=ADDRESS, operands=(2, 3), since=(7, 3)),
    # brkpt;
    Op("brkpt", MISC, "miscellaneous-instructions-brkpt", operands=(0, 0), since=(1, 0)),
    # nanosleep.u32 t;
    Op("nanosleep", MISC, "miscellaneous-instructions-nanosleep",
       types=("u32",), operands=(1, 1), since=(6, 3)),
    # pmevent a;  pmevent.mask a;
    Op("pmevent", MISC, "miscellaneous-instructions-pmevent",
       groups={"mask": one("mask")}, operands=(1, 1), since=(1, 4)),
    # trap;
    Op("trap", MISC, "miscellaneous-instructions-trap", operands=(0, 0), since=(1, 0)),
    # setmaxnreg.action.sync.aligned.u32 imm-reg-count;  .action = {.inc, .dec}
    Op("setmaxnreg", MISC, "miscellaneous-instructions-setmaxnreg",
       types=("u32",),
       groups={"action": one("inc", "dec"), "sync": one("sync"), "aligned": one("aligned")},
       operands=(1, 1), since=(8, 0)),
]
