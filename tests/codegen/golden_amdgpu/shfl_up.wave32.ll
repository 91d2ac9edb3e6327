target triple = "amdgcn-amd-amdhsa"

define amdgpu_kernel void @"k"(i64 %".1") "amdgpu-flat-work-group-size"="1,1024"
{
entry:
  %"params" = alloca [8 x i8], align 8, addrspace(5)
  %".3" = getelementptr i8, ptr addrspace(5) %"params", i64 0
  store i64 %".1", ptr addrspace(5) %".3", align 8
  %"%r0" = alloca i32, addrspace(5)
  %"%r1" = alloca i32, addrspace(5)
  %"%r2" = alloca i32, addrspace(5)
  %"%r3" = alloca i32, addrspace(5)
  %"%r4" = alloca i32, addrspace(5)
  %"%r5" = alloca i32, addrspace(5)
  %"%r6" = alloca i32, addrspace(5)
  %"%r7" = alloca i32, addrspace(5)
  %"%r8" = alloca i32, addrspace(5)
  %"%r9" = alloca i32, addrspace(5)
  %"%r10" = alloca i32, addrspace(5)
  %"%r11" = alloca i32, addrspace(5)
  %"%r12" = alloca i32, addrspace(5)
  %"%r13" = alloca i32, addrspace(5)
  %"%r14" = alloca i32, addrspace(5)
  %"%r15" = alloca i32, addrspace(5)
  %"%rd0" = alloca i64, addrspace(5)
  %"%rd1" = alloca i64, addrspace(5)
  %"%rd2" = alloca i64, addrspace(5)
  %"%rd3" = alloca i64, addrspace(5)
  %"%rd4" = alloca i64, addrspace(5)
  %"%rd5" = alloca i64, addrspace(5)
  %"%rd6" = alloca i64, addrspace(5)
  %"%rd7" = alloca i64, addrspace(5)
  %"%p0" = alloca i1, addrspace(5)
  %"%p1" = alloca i1, addrspace(5)
  %"%p2" = alloca i1, addrspace(5)
  %"%p3" = alloca i1, addrspace(5)
  br label %"entry.1"
entry.1:
  %".6" = call i32 @"llvm.amdgcn.workitem.id.x"()
  store i32 %".6", ptr addrspace(5) %"%r2"
  %".8" = load i32, ptr addrspace(5) %"%r2"
  %".9" = zext i32 %".8" to i64
  store i64 %".9", ptr addrspace(5) %"%rd2"
  %".11" = load i32, ptr addrspace(5) %"%r2"
  %".12" = icmp ult i32 %".11", 5
  %".13" = xor i1 %".12", -1
  store i1 %".12", ptr addrspace(5) %"%p1"
  %".15" = call i32 @"llvm.amdgcn.mbcnt.lo"(i32 -1, i32 0)
  %".16" = and i32 1, 31
  %".17" = and i32 0, 31
  %".18" = lshr i32 0, 8
  %".19" = and i32 %".18", 31
  %".20" = and i32 %".15", %".19"
  %".21" = xor i32 %".19", -1
  %".22" = and i32 %".17", %".21"
  %".23" = or i32 %".20", %".22"
  %".24" = sub i32 %".15", %".16"
  %".25" = icmp sge i32 %".24", %".23"
  %".26" = select  i1 %".25", i32 %".24", i32 %".15"
  %".27" = load i32, ptr addrspace(5) %"%r2"
  %".28" = shl i32 %".26", 2
  %".29" = call i32 @"llvm.amdgcn.ds.bpermute"(i32 %".28", i32 %".27")
  store i32 %".29", ptr addrspace(5) %"%r1"
  store i1 %".25", ptr addrspace(5) %"%p2"
  %".32" = load i64, ptr addrspace(5) %".3", align 8
  store i64 %".32", ptr addrspace(5) %"%rd1"
  %".34" = load i64, ptr addrspace(5) %"%rd1"
  %".35" = inttoptr i64 %".34" to ptr addrspace(1)
  %".36" = load i32, ptr addrspace(5) %"%r1"
  store i32 %".36", ptr addrspace(1) %".35", align 4
  ret void
after_ret:
  ret void
}

declare i32 @"llvm.amdgcn.workitem.id.x"()

declare i32 @"llvm.amdgcn.mbcnt.lo"(i32 %".1", i32 %".2")

declare i32 @"llvm.amdgcn.ds.bpermute"(i32 %".1", i32 %".2")

!llvm.module.flags = !{ !0 }
!0 = !{ i32 1, !"amdhsa_code_object_version", i32 400 }
