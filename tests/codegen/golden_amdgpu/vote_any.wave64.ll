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
  %".15" = load i1, ptr addrspace(5) %"%p1"
  %".16" = xor i1 %".15", -1
  %".17" = call i64 @"llvm.amdgcn.ballot.i64"(i1 %".16")
  %".18" = call i32 @"llvm.amdgcn.mbcnt.lo"(i32 -1, i32 0)
  %".19" = call i32 @"llvm.amdgcn.mbcnt.hi"(i32 -1, i32 %".18")
  %".20" = and i32 %".19", 32
  %".21" = zext i32 %".20" to i64
  %".22" = lshr i64 %".17", %".21"
  %".23" = trunc i64 %".22" to i32
  %".24" = and i32 %".23", 4294967295
  %".25" = call i64 @"llvm.amdgcn.ballot.i64"(i1 1)
  %".26" = call i32 @"llvm.amdgcn.mbcnt.lo"(i32 -1, i32 0)
  %".27" = call i32 @"llvm.amdgcn.mbcnt.hi"(i32 -1, i32 %".26")
  %".28" = and i32 %".27", 32
  %".29" = zext i32 %".28" to i64
  %".30" = lshr i64 %".25", %".29"
  %".31" = trunc i64 %".30" to i32
  %".32" = and i32 %".31", 4294967295
  %".33" = icmp ne i32 %".24", 0
  %".34" = icmp eq i32 %".24", %".32"
  %".35" = xor i1 %".33", -1
  %".36" = or i1 %".34", %".35"
  store i1 %".33", ptr addrspace(5) %"%p2"
  %".38" = load i1, ptr addrspace(5) %"%p2"
  %".39" = select  i1 %".38", i32 1, i32 0
  store i32 %".39", ptr addrspace(5) %"%r1"
  %".41" = load i64, ptr addrspace(5) %".3", align 8
  store i64 %".41", ptr addrspace(5) %"%rd1"
  %".43" = load i64, ptr addrspace(5) %"%rd1"
  %".44" = inttoptr i64 %".43" to ptr addrspace(1)
  %".45" = load i32, ptr addrspace(5) %"%r1"
  store i32 %".45", ptr addrspace(1) %".44", align 4
  ret void
after_ret:
  ret void
}

declare i32 @"llvm.amdgcn.workitem.id.x"()

declare i64 @"llvm.amdgcn.ballot.i64"(i1 %".1")

declare i32 @"llvm.amdgcn.mbcnt.lo"(i32 %".1", i32 %".2")

declare i32 @"llvm.amdgcn.mbcnt.hi"(i32 %".1", i32 %".2")

!llvm.module.flags = !{ !0 }
!0 = !{ i32 1, !"amdhsa_code_object_version", i32 400 }
