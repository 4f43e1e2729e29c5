/*
** Frontend: operand checks on a read prototype (see gj_bc.h).
**
** The typer and codegen index their per-slot arrays, the constant tables
** and the instruction list with the operands of each instruction.  LuaJIT's
** parser only writes operands in range, but bytecode can come from
** elsewhere (string.dump output edited or corrupted, a mutated prototype in
** spec/fuzz/frontend_fuzz.c), so every operand is checked here once, with
** the operand kinds of LuaJIT 2.1's lj_bc.h: a slot below the frame size
** (with the slots a call, a return or a loop reaches), a constant index
** below the number of constants, an upvalue below the number of upvalues,
** a jump inside the function.  What passes may still be refused by the
** typer, with a message; it can no longer read outside its arrays.
*/
#include <stdint.h>

#include "gj_bc.h"

/* "malformed bytecode" error at instruction i. */
static int bad(const gj_proto *p, int i, const char *what, gj_err *err)
{
  return gj_err_set(err, "%s:%d: malformed bytecode: %s %s (in function at line %d)",
                    p->chunk, p->ins[i].line, gj_bc_names[p->ins[i].op], what,
                    p->linedefined);
}

int gj_bc_check(const gj_proto *p, int fr2, gj_err *err)
{
  int i, fs = p->framesize;
  if (p->nins < 1) return gj_err_set(err, "%s: empty function", p->chunk);
  for (i = 0; i < p->nins; i++) {
    const gj_ins *in = &p->ins[i];
    int a = in->a, b = in->b, c = in->c, d = in->d;
    /* slots that must exist: lo..hi (none when hi < lo) */
    int lo = 0, hi = -1, lo2 = 0, hi2 = -1;
    int knum = -1, kgc = -1, uv = -1;
    switch (in->op) {
    case GJ_BC_ISLT: case GJ_BC_ISGE: case GJ_BC_ISLE: case GJ_BC_ISGT:
    case GJ_BC_ISEQV: case GJ_BC_ISNEV: case GJ_BC_ISTC: case GJ_BC_ISFC:
    case GJ_BC_MOV: case GJ_BC_NOT: case GJ_BC_UNM: case GJ_BC_LEN:
      lo = hi = a; lo2 = hi2 = d; break;
    case GJ_BC_KNIL:
      lo = a; hi = d; break;
    case GJ_BC_ISEQS: case GJ_BC_ISNES: case GJ_BC_KSTR: case GJ_BC_KCDATA:
    case GJ_BC_FNEW: case GJ_BC_TDUP: case GJ_BC_GGET: case GJ_BC_GSET:
      lo = hi = a; kgc = d; break;
    case GJ_BC_ISEQN: case GJ_BC_ISNEN: case GJ_BC_KNUM:
      lo = hi = a; knum = d; break;
    case GJ_BC_TSETM:  /* the table is in A-1 */
      lo = a - 1; hi = a; knum = d; break;
    case GJ_BC_ISEQP: case GJ_BC_ISNEP: case GJ_BC_ISTYPE: case GJ_BC_ISNUM:
    case GJ_BC_KSHORT: case GJ_BC_KPRI: case GJ_BC_TNEW: case GJ_BC_RET1:
    case GJ_BC_ITERL: case GJ_BC_ISNEXT:
      lo = hi = a; break;
    case GJ_BC_IST: case GJ_BC_ISF:
      lo = hi = d; break;
    case GJ_BC_ADDVN: case GJ_BC_SUBVN: case GJ_BC_MULVN: case GJ_BC_DIVVN:
    case GJ_BC_MODVN: case GJ_BC_ADDNV: case GJ_BC_SUBNV: case GJ_BC_MULNV:
    case GJ_BC_DIVNV: case GJ_BC_MODNV:
      lo = hi = a; lo2 = hi2 = b; knum = c; break;
    case GJ_BC_ADDVV: case GJ_BC_SUBVV: case GJ_BC_MULVV: case GJ_BC_DIVVV:
    case GJ_BC_MODVV: case GJ_BC_POW: case GJ_BC_TGETV: case GJ_BC_TGETR:
    case GJ_BC_TSETV: case GJ_BC_TSETR:
      lo = hi = a; lo2 = b < c ? b : c; hi2 = b < c ? c : b; break;
    case GJ_BC_CAT:
      lo = hi = a; lo2 = b; hi2 = c; break;
    case GJ_BC_TGETS: case GJ_BC_TSETS:
      lo = hi = a; lo2 = hi2 = b; kgc = c; break;
    case GJ_BC_TGETB: case GJ_BC_TSETB:
      lo = hi = a; lo2 = hi2 = b; break;
    case GJ_BC_UGET:
      lo = hi = a; uv = d; break;
    case GJ_BC_USETV:
      uv = a; lo = hi = d; break;
    case GJ_BC_USETS:
      uv = a; kgc = d; break;
    case GJ_BC_USETN:
      uv = a; knum = d; break;
    case GJ_BC_USETP:
      uv = a; break;
    case GJ_BC_CALL: case GJ_BC_CALLM: case GJ_BC_ITERC: case GJ_BC_ITERN:
      /* function and C-1 arguments from A; B-1 results into A.. */
      lo = a; hi = a + fr2 + (c > 0 ? c - 1 : 0);
      if (in->op == GJ_BC_ITERC || in->op == GJ_BC_ITERN) lo = a - 3;
      lo2 = a; hi2 = a + b - 2; break;
    case GJ_BC_CALLT: case GJ_BC_CALLMT:
      lo = a; hi = a + fr2 + (d > 0 ? d - 1 : 0); break;
    case GJ_BC_VARG:
      lo = a; hi = a + b - 2; break;
    case GJ_BC_RETM:
      lo = a; hi = a + d - 1; break;
    case GJ_BC_RET:
      lo = a; hi = a + d - 2; break;
    case GJ_BC_FORI: case GJ_BC_FORL:
      lo = a; hi = a + 3; break;
    case GJ_BC_UCLO: case GJ_BC_RET0: case GJ_BC_LOOP: case GJ_BC_JMP:
      break;
    default:
      return bad(p, i, "cannot appear in a function body", err);
    }
    if (lo < 0 || hi >= fs || lo2 < 0 || hi2 >= fs)
      return bad(p, i, "uses a slot beyond the function's frame", err);
    if (knum >= p->nknum) return bad(p, i, "names a missing number constant", err);
    if (kgc >= p->nkgc) return bad(p, i, "names a missing constant", err);
    if (uv >= p->nuv) return bad(p, i, "names a missing upvalue", err);
    if (in->target != -1 && (in->target < 0 || in->target >= p->nins))
      return bad(p, i, "jumps outside the function", err);
  }
  switch (p->ins[p->nins - 1].op) {
  case GJ_BC_RET: case GJ_BC_RET0: case GJ_BC_RET1: case GJ_BC_RETM:
  case GJ_BC_CALLT: case GJ_BC_CALLMT: case GJ_BC_JMP:
    return 0;
  default:
    return bad(p, p->nins - 1, "ends the function without a return", err);
  }
}
