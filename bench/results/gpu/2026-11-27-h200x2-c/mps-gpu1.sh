#!/bin/bash
# By hand (issue 27 item 5, a finding of cgroup_gpu.sh): per-job MPS for a job
# on GPU 1 of a two-GPU node, with and without ConstrainDevices: what the
# job's task and the before-check (both clients of the job's daemon) see.
# Usage: mps-gpu1.sh SRCDIR BUILDDIR   (after tests/gpu/run built BUILDDIR)
S=$1 B=$2 P=/tmp/gpumem-prefix trip=x86_64-linux-gnu
export SLURM_PREFIX=$P LD_LIBRARY_PATH=$P/usr/lib/$trip:$P/usr/lib/$trip/slurm-wlm PATH=$P/usr/bin:$P/usr/sbin:/usr/local/cuda/bin:$PATH
echo "# date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "# device:  $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | paste -sd';')"
echo "# command: mps-gpu1.sh $* (by hand, bench/results/gpu/2026-11-27-h200x2-c/mps-gpu1.sh; folder name corrected after the run)"
export GPUMEM_CLUSTER_DIR=/tmp/gpumem-mps1
CL=$S/tests/slurm/cluster t=/tmp/mps1
rm -rf $t; mkdir -p $t/reports $t/libexec; chmod 755 $t
nvcc -o $t/devcount $S/tests/gpu/devcount.cu || exit 1
ln -s $B/plugin/probe/gpumem-probe $B/kernels/l2reset/gpumem-l2reset $t/libexec/
printf 'version: 1\nlimits:\n  mps_daemons: [none, site, job]\nreport:\n  dir: %s/reports\n' $t >$t/site.yaml
printf 'version: 1\nmps:\n  active_thread_percentage: 50\n  daemon: job\ncheck:\n  before: true\n' >$t/mps.yaml
echo "required $B/plugin/spank/.libs/gpumem.so site=$t/site.yaml libexecdir=$t/libexec check=$B/kernels/check/gpumem-check" >$t/plugstack.conf
chmod -R a+rX $t
for mode in none "--cgroup v2"; do
	echo "== node: ${mode/none/no cgroup (task\/none)}"
	$CL start $([ "$mode" = none ] || echo $mode) --gpus 2 --plugstack $t/plugstack.conf >$t/start.log 2>&1 || { cat $t/start.log; continue; }
	eval "$($CL env)"; cd $GPUMEM_CLUSTER_TMP
	timeout 60 srun --gres=gpu:1 sleep 40 >/dev/null 2>&1 & h=$!; sleep 2
	for pol in none $t/mps.yaml; do
		echo "-- job on GPU 1, policy $pol"
		$CL runas srun --gres=gpu:1 $([ $pol = none ] || echo --gpumem-policy=$pol) sh -c 'echo "step=$SLURM_STEP_GPUS cvd=$CUDA_VISIBLE_DEVICES mps=${CUDA_MPS_PIPE_DIRECTORY:-none}"; "$0"' $t/devcount 2>&1
		echo "exit $?"
	done
	sleep 1; grep -h 'gpumem: check before' $GPUMEM_CLUSTER_DIR/log/slurmd.gpumem1.log | sed 's/^/slurmd: /'
	scancel -u root >/dev/null 2>&1; wait $h; cd /; $CL stop >/dev/null 2>&1
done
