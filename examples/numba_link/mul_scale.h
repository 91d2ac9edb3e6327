// Found through the include path ptxport gives NVRTC: the .cu file's own directory.
#define MUL_SCALE 1.0f
