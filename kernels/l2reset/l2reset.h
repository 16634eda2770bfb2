/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What l2reset.c and l2reset_nvml.c share. */
#ifndef GPUMEM_L2RESET_H
#define GPUMEM_L2RESET_H
#include <stddef.h>
#include "core_base.h"

/*
 * Does any process hold a GPU of this node (NVML's compute processes)?  1
 * yes or unknown (WHY says), 0 no process on any GPU: the persisting L2 of
 * every context is gone with it (*NGPUS: how many GPUs NVML lists).
 */
int gpumem_l2_node_held(unsigned int *ngpus, char *why, size_t len);
#endif
