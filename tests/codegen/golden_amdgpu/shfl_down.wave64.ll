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
  %".16" = call i32 @"llvm.amdgcn.mbcnt.hi"(i32 -1, i32 %".15")
  %".17" = and i32 %".16", 31
  %".18" = and i32 16, 31
  %".19" = and i32 31, 31
  %".20" = lshr i32 31, 8
  %".21" = and i32 %".20", 31
  %".22" = and i32 %".17", %".21"
  %".23" = xor i32 %".21", -1
  %".24" = and i32 %".19", %".23"
  %".25" = or i32 %".22", %".24"
  %".26" = add i32 %".17", %".18"
  %".27" = icmp sle i32 %".26", %".25"
  %".28" = select  i1 %".27", i32 %".26", i32 %".17"
  %".29" = load i32, ptr addrspace(5) %"%r2"
  %".30" = call i32 @"llvm.amdgcn.mbcnt.lo"(i32 -1, i32 0)
  %".31" = call i32 @"llvm.amdgcn.mbcnt.hi"(i32 -1, i32 %".30")
  %".32" = and i32 %".31", 32
  %".33" = or i32 %".32", %".28"
  %".34" = shl i32 %".33", 2
  %".35" = call i32 @"llvm.amdgcn.ds.bpermute"(i32 %".34", i32 %".29")
  store i32 %".35", ptr addrspace(5) %"%r1"
  %".37" = load i64, ptr addrspace(5) %".3", align 8
  store i64 %".37", ptr addrspace(5) %"%rd1"
  %".39" = load i64, ptr addrspace(5) %"%rd1"
  %".40" = inttoptr i64 %".39" to ptr addrspace(1)
  %".41" = load i32, ptr addrspace(5) %"%r1"
  store i32 %".41", ptr addrspace(1) %".40", align 4
  ret void
after_ret:
  ret void
}

declare i32 @"llvm.amdgcn.workitem.id.x"()

declare i32 @"llvm.amdgcn.mbcnt.lo"(i32 %".1", i32 %".2")

declare i32 @"llvm.amdgcn.mbcnt.hi"(i32 %".1", i32 %".2")

declare i32 @"llvm.amdgcn.ds.bpermute"(i32 %".1", i32 %".2")

!llvm.module.flags = !{ !0 }
!0 = !{ i32 1, !"amdhsa_code_object_version", i32 400 }
