/*
** The signature's type names -> the kernel's parameter types (gj_ty), for
** the typer: scalars ("float", "int32_t"), whole-number classes
** ("lua_pos20"), arrays ("float[]", and multi-dimensional "float[][4][3]":
** the outer count from the descriptor, the others a shape in cs), structs
** by their layout text ("{particle;...}", a reference) and arrays of them
** ("{...}[]", "{...}[][8]").  See docs/typing.md.
*/
#ifndef GJ_PARAMS_H
#define GJ_PARAMS_H

#include "gj_err.h"
#include "gj_pipeline.h"
#include "gj_typer.h"

/* params[0 .. o->nparams) from o->types; 0, or -1 with err set naming the
** kernel and the argument.  Array tags for bounds checks from
** o->boundscheck and o->one_based. */
int gj_param_types(gj_cs *cs, const gj_compile_opts *o, gj_ty *params,
                   gj_err *err);

#endif
