#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Compile-only check of the tree's own users of the APIs the series
# changes: lib/test_hmm.c, nouveau's dmem (DRM_NOUVEAU_SVM) and amdkfd's
# migration code (HSA_AMD_SVM).  Uses a separate build folder in the cache.
set -eu
. "$(dirname "$0")/lib.sh"
need make gcc ccache
B=$KDIR/build-callers
kbuild_env
KM=(locked make -C "$KSRC" O="$B" "CC=ccache gcc" KCFLAGS=-pipe -j"$JOBS" -s)
mkdir -p "$B"
if [ ! -f "$B/.config" ]; then
	progress "configuring the callers build (x86_64 defconfig + DRM_NOUVEAU_SVM + HSA_AMD_SVM)"
	"${KM[@]}" defconfig >/dev/null
	"$KSRC/scripts/config" --file "$B/.config" -e TRANSPARENT_HUGEPAGE \
		-e MEMORY_HOTPLUG -e MEMORY_HOTREMOVE -e ZONE_DEVICE -e DEVICE_PRIVATE \
		-e HMM_MIRROR -e STAGING -e RUNTIME_TESTING_MENU -m TEST_HMM -e DRM -m DRM_NOUVEAU \
		-e DRM_NOUVEAU_SVM -m DRM_AMDGPU -e HSA_AMD -e HSA_AMD_SVM
	"${KM[@]}" olddefconfig >/dev/null
	for o in DRM_NOUVEAU_SVM HSA_AMD_SVM DEVICE_PRIVATE; do
		grep -q "^CONFIG_$o=y" "$B/.config" || die "callers config lost CONFIG_$o"
	done
fi
t=$(now)
progress "compiling the in-tree callers"
"${KM[@]}" prepare
"${KM[@]}" lib/test_hmm.o drivers/gpu/drm/nouveau/nouveau_dmem.o \
	drivers/gpu/drm/nouveau/nouveau_svm.o \
	drivers/gpu/drm/amd/amdgpu/../amdkfd/kfd_migrate.o \
	drivers/gpu/drm/amd/amdgpu/../amdkfd/kfd_svm.o ||
	die "an in-tree caller does not compile"
took "$t" "callers compile"
