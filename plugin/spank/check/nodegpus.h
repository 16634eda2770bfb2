/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * How many GPUs this node has, from the device files next to the
 * plugstack's nvidia_dev (/dev/nvidiactl: /dev/nvidia0, /dev/nvidia1, ...),
 * with no driver call: whether the warm check server is worth its
 * trade-offs on this node (check.warm_min_gpus).
 */
#ifndef GPUMEM_NODEGPUS_H
#define GPUMEM_NODEGPUS_H

/* The count of nvidiaN device files beside NVIDIA_DEV (0 where none or unreadable). */
int gpumem_node_gpus(const char *nvidia_dev);

#endif
