#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Compile-only check of the tree's own users of the APIs the series
# changes: lib/test_hmm.c, nouveau's dmem (DRM_NOUVEAU_SVM), amdkfd's
# migration code (HSA_AMD_SVM) and, where the tree has them (7.3),
# drm_pagemap and xe's SVM (DRM_XE_GPUSVM).  Uses a separate build folder
# in the cache.
set -eu
. "$(dirname "$0")/lib.sh"
need make gcc ccache
B=$KDIR/build-callers
kbuild_env
OPTS="DRM_NOUVEAU_SVM HSA_AMD_SVM DEVICE_PRIVATE"
OBJS="lib/test_hmm.o drivers/gpu/drm/nouveau/nouveau_dmem.o
	drivers/gpu/drm/nouveau/nouveau_svm.o
	drivers/gpu/drm/amd/amdgpu/../amdkfd/kfd_migrate.o
	drivers/gpu/drm/amd/amdgpu/../amdkfd/kfd_svm.o"
if [ -f "$KSRC/drivers/gpu/drm/drm_pagemap.c" ]; then
	OPTS="$OPTS DRM_XE_GPUSVM"
	OBJS="$OBJS drivers/gpu/drm/drm_pagemap.o drivers/gpu/drm/drm_gpusvm.o
	drivers/gpu/drm/xe/xe_svm.o"
fi
# A build folder configured before a caller was added is configured again.
for o in $OPTS; do
	grep -q "^CONFIG_$o=y" "$B/.config" 2>/dev/null || rm -f "$B/.config"
done
KM=(locked make -C "$KSRC" O="$B" "CC=ccache gcc" KCFLAGS=-pipe -j"$JOBS" -s)
mkdir -p "$B"
if [ ! -f "$B/.config" ]; then
	progress "configuring the callers build (x86_64 defconfig + ${OPTS// / + })"
	"${KM[@]}" defconfig >/dev/null
	"$KSRC/scripts/config" --file "$B/.config" -e TRANSPARENT_HUGEPAGE \
		-e MEMORY_HOTPLUG -e MEMORY_HOTREMOVE -e ZONE_DEVICE -e DEVICE_PRIVATE \
		-e HMM_MIRROR -e STAGING -e RUNTIME_TESTING_MENU -m TEST_HMM -e DRM -m DRM_NOUVEAU \
		-e DRM_NOUVEAU_SVM -m DRM_AMDGPU -e HSA_AMD -e HSA_AMD_SVM \
		-m DRM_XE -e DRM_XE_GPUSVM
	"${KM[@]}" olddefconfig >/dev/null
	for o in $OPTS; do
		grep -q "^CONFIG_$o=y" "$B/.config" || die "callers config lost CONFIG_$o"
	done
fi
t=$(now)
progress "compiling the in-tree callers"
"${KM[@]}" prepare
# shellcheck disable=SC2086  # OBJS is a list
"${KM[@]}" $OBJS ||
	die "an in-tree caller does not compile"
took "$t" "callers compile"
