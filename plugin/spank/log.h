/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Every line the plugin writes to Slurm's logs on the node goes through
 * these: the whole line is escaped (plugin/core/base/trust.h), so no string a
 * user chose (a policy name, a check's output, a job variable) can add
 * lines to slurmd's log or send terminal escapes to whoever reads it.
 */
#ifndef GPUMEM_LOG_H
#define GPUMEM_LOG_H
#include <slurm/spank.h>
#include "core_base.h"

#define GPUMEM_LOG_(fn, ...) do {						\
		char gpumem_log_line_[4096];					\
		gpumem_escape_fmt(gpumem_log_line_, sizeof(gpumem_log_line_), __VA_ARGS__); \
		fn("%s", gpumem_log_line_);					\
	} while (0)
#define gpumem_info(...) GPUMEM_LOG_(slurm_info, __VA_ARGS__)
#define gpumem_error(...) GPUMEM_LOG_(slurm_error, __VA_ARGS__)
#endif
