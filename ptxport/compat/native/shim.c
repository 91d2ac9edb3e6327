/* ptxport's drop-in CUDA libraries (libcuda.so.1, libcublas.so.13, ...): a thin layer between
 * C callers and a Python dispatch module (ptxport.compat.dispatch for the driver), which owns
 * every decision. Each library is this file compiled with its own entry points; all of them
 * share one interpreter (the first to be called starts it, the others join it).
 *
 * What is here: starting (or joining) the Python interpreter on the first call, calling the
 * Python handler of an entry point with its arguments as Python ints, and a pool of stubs
 * that cuGetProcAddress hands out for names ptxport does not know. The typed entry points
 * (from ptxport/compat/signatures.py) and a named stub for every other name of the library's
 * API (compat/driver_names.py) are generated into entry_points.h; the build (compat/build.py)
 * passes PTXPORT_ENTRY_COUNT, PTXPORT_LIBPYTHON, PTXPORT_PYTHONHOME, PTXPORT_DISPATCH (the
 * module), PTXPORT_STATUS_NOT_INITIALIZED and PTXPORT_STATUS_FAILED (the library's status
 * codes) as macros, and PTXPORT_STUB_POOL=1 for the driver (cuGetProcAddress's stubs).
 *
 * Nothing here may crash the host program: a handler that raises is reported on stderr and
 * the call returns PTXPORT_STATUS_FAILED (CUDA_ERROR_UNKNOWN for the driver).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define PTXPORT_STUB_COUNT 1024
#define PTXPORT_MAX_ARGS 32  /* the masks are 32-bit unsigned */

static pthread_once_t started = PTHREAD_ONCE_INIT;
static PyObject *handlers[PTXPORT_ENTRY_COUNT];
static PyObject *unsupported_handler;
static int ready;
static int joined;  /* the host is a Python program: its interpreter is ptxport's */

static void report_python_error(const char *what) {
    fprintf(stderr, "ptxport: %s:\n", what);
    PyErr_Print();
    fflush(stderr);
}

static int start_interpreter(void) {
    /* libcuda.so.1 was loaded with RTLD_LOCAL, and libpython with it: make libpython's
     * symbols global so that extension modules (numpy, llvmlite) find them. */
    if (!dlopen(PTXPORT_LIBPYTHON, RTLD_NOW | RTLD_GLOBAL)) {
        fprintf(stderr, "ptxport: cannot load %s: %s\n", PTXPORT_LIBPYTHON, dlerror());
        return -1;
    }
    if (Py_IsInitialized()) {
        joined = 1;
        return 0;  /* the host is a Python program (numba, CuPy, ctypes): join it */
    }
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0;  /* signals stay the host program's */
    config.parse_argv = 0;
    PyStatus status = PyConfig_SetBytesString(&config, &config.home, PTXPORT_PYTHONHOME);
    /* sys.executable: the Python of `ptxport run`, for the subprocesses ptxport starts (the
     * default would be the host program). */
    const char *executable = getenv("PTXPORT_PYTHON");
    if (!PyStatus_Exception(status) && executable && *executable)
        status = PyConfig_SetBytesString(&config, &config.executable, executable);
    if (!PyStatus_Exception(status))
        status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
        fprintf(stderr, "ptxport: cannot start Python: %s\n",
                status.err_msg ? status.err_msg : "unknown error");
        return -1;
    }
    PyEval_SaveThread();  /* other threads (ptxport's stream workers) need the GIL */
    return 0;
}

static const char *library_path(void) {
    Dl_info info;
    return dladdr((void *)&start_interpreter, &info) ? info.dli_fname : "";
}

static int load_handlers(void) {
    /* `ptxport run` passes where its Python finds ptxport and its dependencies. */
    if (PyRun_SimpleString(
            "import os, sys\n"
            "sys.path[:0] = [p for p in os.environ.get('PTXPORT_PYTHONPATH', '')"
            ".split(os.pathsep) if p and p not in sys.path]\n") != 0)
        return -1;
    PyObject *module = PyImport_ImportModule(PTXPORT_DISPATCH);
    if (!module) {
        report_python_error("cannot import " PTXPORT_DISPATCH " (is ptxport on "
                            "PTXPORT_PYTHONPATH? `ptxport env` prints it)");
        return -1;
    }
    PyObject *table = PyObject_CallMethod(module, "start", "s", library_path());
    Py_DECREF(module);
    if (!table) {
        report_python_error(PTXPORT_DISPATCH ".start failed");
        return -1;
    }
    /* (handlers in entry-point order, the handler of the stubs) */
    PyObject *list = PyTuple_GetItem(table, 0);
    if (!list || PyList_Size(list) != PTXPORT_ENTRY_COUNT) {
        fprintf(stderr, "ptxport: the compiled shim does not match ptxport.compat: rebuild "
                        "it (delete ptxport's cache directory)\n");
        Py_DECREF(table);
        return -1;
    }
    for (Py_ssize_t i = 0; i < PTXPORT_ENTRY_COUNT; i++) {
        handlers[i] = PyList_GetItem(list, i);
        Py_INCREF(handlers[i]);
    }
    unsupported_handler = PyTuple_GetItem(table, 1);
    Py_INCREF(unsupported_handler);
    Py_DECREF(table);
    return 0;
}

static void flush_python_output(void) {
    if (!Py_IsInitialized())
        return;
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *sys_module = PyImport_ImportModule("sys");
    const char *names[] = {"stdout", "stderr"};
    for (int i = 0; sys_module && i < 2; i++) {
        PyObject *stream = PyObject_GetAttrString(sys_module, names[i]);
        PyObject *r = stream ? PyObject_CallMethod(stream, "flush", NULL) : NULL;
        Py_XDECREF(r);
        Py_XDECREF(stream);
    }
    PyErr_Clear();
    Py_XDECREF(sys_module);
    PyGILState_Release(gil);
}

static void start(void) {
    if (start_interpreter() != 0)
        return;
    PyGILState_STATE gil = PyGILState_Ensure();
    ready = load_handlers() == 0;
    PyGILState_Release(gil);
    /* Python is never finalised (the host may call CUDA from its own exit handlers), so
     * what ptxport printed is flushed when the process exits. A Python host finalises its
     * interpreter (and flushes its streams) itself before C's exit handlers run, and a
     * flush after that would touch a finalised interpreter (a crash at exit). */
    if (ready && !joined)
        atexit(flush_python_output);
}

/* Call handler `index` with `nargs` arguments; bit i of `signed_mask` says that argument i
 * is a signed integer, bit i of `float_mask` that it holds the bits of a float or double
 * (as the low 32 or all 64 bits: `double_mask`). */
static int64_t call_handler(PyObject *handler, int nargs, const uint64_t *args,
                            unsigned signed_mask, unsigned float_mask, unsigned double_mask) {
    PyObject *argv[PTXPORT_MAX_ARGS];
    for (int i = 0; i < nargs; i++) {
        if (double_mask & (1u << i)) {
            double d;
            memcpy(&d, &args[i], sizeof d);
            argv[i] = PyFloat_FromDouble(d);
        } else if (float_mask & (1u << i)) {
            float f;
            uint32_t bits = (uint32_t)args[i];
            memcpy(&f, &bits, sizeof f);
            argv[i] = PyFloat_FromDouble(f);
        } else if (signed_mask & (1u << i)) {
            argv[i] = PyLong_FromLongLong((int64_t)args[i]);
        } else {
            argv[i] = PyLong_FromUnsignedLongLong(args[i]);
        }
    }
    PyObject *result = PyObject_Vectorcall(handler, argv, nargs, NULL);
    for (int i = 0; i < nargs; i++)
        Py_XDECREF(argv[i]);
    int64_t value = PTXPORT_STATUS_FAILED;
    if (result) {
        value = PyLong_AsLongLong(result);
        Py_DECREF(result);
    }
    if (PyErr_Occurred()) {
        report_python_error("a CUDA call failed inside ptxport (a bug: please report it)");
        value = PTXPORT_STATUS_FAILED;
    }
    return value;
}

/* Take the GIL for a call. The first call of each thread gives it a Python thread state
 * that lives as long as the thread: PyGILState_Release would otherwise delete the state a
 * call made, and with it the thread's threading.local values (its current context, its
 * per-thread default stream). */
static __thread int thread_has_state;

static PyGILState_STATE enter_python(void) {
    if (!thread_has_state) {
        PyGILState_Ensure();
        PyEval_SaveThread();
        thread_has_state = 1;
    }
    return PyGILState_Ensure();
}

static int64_t ptxport_call(int index, int nargs, const uint64_t *args, unsigned signed_mask,
                            unsigned float_mask, unsigned double_mask) {
    pthread_once(&started, start);
    if (!ready)
        return PTXPORT_STATUS_NOT_INITIALIZED;
    PyGILState_STATE gil = enter_python();
    int64_t value = call_handler(handlers[index], nargs, args, signed_mask, float_mask,
                                 double_mask);
    PyGILState_Release(gil);
    return value;
}

/* Stubs for entry points ptxport does not implement: cuGetProcAddress gives stub k to the
 * k-th such name asked for, and the Python side remembers which name that was. */
static int ptxport_unsupported(int k) {
    pthread_once(&started, start);
    if (!ready)
        return PTXPORT_STATUS_NOT_INITIALIZED;
    PyGILState_STATE gil = enter_python();
    uint64_t arg = (uint64_t)k;
    int value = (int)call_handler(unsupported_handler, 1, &arg, 0, 0, 0);
    PyGILState_Release(gil);
    return value;
}

#if PTXPORT_STUB_POOL
/* A stub's name holds its index as five base-4 digits after a leading 1, written as a
 * decimal literal (stub_100213 is index 0*256 + 0*64 + 2*16 + 1*4 + 3). */
static int stub_index(int literal) {
    int index = 0;
    for (int scale = 10000; scale > 0; scale /= 10)
        index = 4 * index + (literal / scale) % 10;
    return index;
}

#define STUB1(k) static int stub_##k(void) { return ptxport_unsupported(stub_index(k)); }
#define STUB4(k) STUB1(k##0) STUB1(k##1) STUB1(k##2) STUB1(k##3)
#define STUB16(k) STUB4(k##0) STUB4(k##1) STUB4(k##2) STUB4(k##3)
#define STUB64(k) STUB16(k##0) STUB16(k##1) STUB16(k##2) STUB16(k##3)
#define STUB256(k) STUB64(k##0) STUB64(k##1) STUB64(k##2) STUB64(k##3)
/* stub names are base-4 digits after a leading 1: stub_100000 .. stub_133333 */
STUB256(10) STUB256(11) STUB256(12) STUB256(13)

#define REF1(k) stub_##k,
#define REF4(k) REF1(k##0) REF1(k##1) REF1(k##2) REF1(k##3)
#define REF16(k) REF4(k##0) REF4(k##1) REF4(k##2) REF4(k##3)
#define REF64(k) REF16(k##0) REF16(k##1) REF16(k##2) REF16(k##3)
#define REF256(k) REF64(k##0) REF64(k##1) REF64(k##2) REF64(k##3)
static int (*const stubs[PTXPORT_STUB_COUNT])(void) = {
    REF256(10) REF256(11) REF256(12) REF256(13)
};

EXPORT void *ptxport_stub_address(int k) {
    return k >= 0 && k < PTXPORT_STUB_COUNT ? (void *)stubs[k] : NULL;
}

EXPORT int ptxport_stub_count(void) { return PTXPORT_STUB_COUNT; }

#endif

#include "entry_points.h"
