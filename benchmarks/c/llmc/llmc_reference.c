/* llmc_reference.c: llm.c's plain-C trainer (train_gpt2.c, from the user's checkout, included
 * with TESTING defined so that its own main() is left out) driven the way llm.c's CUDA
 * programs train, for benchmarks/llmc.py:
 *
 *   train CKPT DATA B T STEPS LR BETA2 CLIP
 *       one step per batch of DATA (llm.c's DataLoader, shuffled as the CUDA trainers load
 *       it), AdamW (beta1 0.9, eps 1e-8, no weight decay); with CLIP 1 the gradients are first
 *       scaled to a global norm of at most 1, as train_gpt2.cu does.
 *       Prints "step N loss L ms M" per step.
 *   debug CKPT DATA B T OUT
 *       writes the debug state that test_gpt2_fp32.cu and test_gpt2.cu read (magic 20240327,
 *       version 2: B, T; then the first batch's inputs and targets, the logits over the real
 *       vocabulary, the loss, and every parameter's gradient), then takes the ten steps of
 *       each test on that batch and prints "fp32 step N loss L" (AdamW lr 1e-4, beta2 0.999,
 *       weight decay 0.01, as test_gpt2_fp32.cu) and, from the same start, "bf16 step N loss L"
 *       (beta2 0.95, no weight decay, gradients clipped to norm 1, as test_gpt2.cu).
 *
 * Built by benchmarks/llmc.py: gcc -O3 -march=native -fopenmp -DOMP -I<llm.c> this.c -lm */

#define TESTING
#include "train_gpt2.c"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* Scales the gradients to a global L2 norm of at most 1 (train_gpt2.cu's grad_clip 1.0). */
static void clip_gradients(GPT2 *model)
{
    double sum = 0.0;
    for (size_t i = 0; i < model->num_parameters; i++)
        sum += (double)model->grads_memory[i] * model->grads_memory[i];
    float norm = (float)sqrt(sum);
    if (norm > 1.0f)
        for (size_t i = 0; i < model->num_parameters; i++)
            model->grads_memory[i] *= 1.0f / norm;
}

static void step(GPT2 *model, int *inputs, int *targets, int B, int T, float lr, float beta2,
                 float decay, int clip, int t)
{
    gpt2_forward(model, inputs, targets, B, T);
    gpt2_zero_grad(model);
    gpt2_backward(model);
    if (clip)
        clip_gradients(model);
    gpt2_update(model, lr, 0.9f, beta2, 1e-8f, decay, t);
}

static int train(char **argv)
{
    int B = atoi(argv[3]), T = atoi(argv[4]), steps = atoi(argv[5]), clip = atoi(argv[8]);
    float lr = atof(argv[6]), beta2 = atof(argv[7]);
    GPT2 model;
    gpt2_build_from_checkpoint(&model, argv[1]);
    DataLoader loader;
    dataloader_init(&loader, argv[2], B, T, 0, 1, 1);
    for (int s = 0; s < steps; s++) {
        double start = now_s();
        dataloader_next_batch(&loader);
        step(&model, loader.inputs, loader.targets, B, T, lr, beta2, 0.0f, clip, s + 1);
        printf("step %d loss %.9g ms %.3f\n", s + 1, model.mean_loss, (now_s() - start) * 1e3);
        fflush(stdout);
    }
    dataloader_free(&loader);
    gpt2_free(&model);
    return 0;
}

static void write_debug_state(GPT2 *model, const int *x, const int *y, int B, int T,
                              const char *path)
{
    int V = model->config.vocab_size, Vp = model->config.padded_vocab_size;
    int header[256] = {20240327, 2, B, T};
    FILE *f = fopenCheck(path, "wb");
    fwrite(header, sizeof(int), 256, f);
    fwrite(x, sizeof(int), B * T, f);
    fwrite(y, sizeof(int), B * T, f);
    for (int bt = 0; bt < B * T; bt++)
        fwrite(model->acts.logits + (size_t)bt * Vp, sizeof(float), V, f);
    fwrite(&model->mean_loss, sizeof(float), 1, f);
    fwrite(model->grads_memory, sizeof(float), model->num_parameters, f);
    fcloseCheck(f);
}

static int debug(char **argv)
{
    int B = atoi(argv[3]), T = atoi(argv[4]);
    const char *variants[2] = {"fp32", "bf16"};
    for (int v = 0; v < 2; v++) {
        GPT2 model;
        gpt2_build_from_checkpoint(&model, argv[1]);
        DataLoader loader;
        dataloader_init(&loader, argv[2], B, T, 0, 1, 0);
        dataloader_next_batch(&loader);
        for (int s = 0; s < 10; s++) {
            if (v == 0)
                step(&model, loader.inputs, loader.targets, B, T, 1e-4f, 0.999f, 0.01f, 0, s + 1);
            else
                step(&model, loader.inputs, loader.targets, B, T, 1e-4f, 0.95f, 0.0f, 1, s + 1);
            printf("%s step %d loss %.9g\n", variants[v], s, model.mean_loss);
        }
        dataloader_free(&loader);
        gpt2_free(&model);
    }
    /* The state itself: one forward and backward pass of the fresh model on the first batch. */
    GPT2 model;
    gpt2_build_from_checkpoint(&model, argv[1]);
    DataLoader loader;
    dataloader_init(&loader, argv[2], B, T, 0, 1, 0);
    dataloader_next_batch(&loader);
    gpt2_forward(&model, loader.inputs, loader.targets, B, T);
    gpt2_zero_grad(&model);
    gpt2_backward(&model);
    write_debug_state(&model, loader.inputs, loader.targets, B, T, argv[5]);
    dataloader_free(&loader);
    gpt2_free(&model);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "train") == 0 && argc == 10)
        return train(argv + 1);
    if (argc >= 2 && strcmp(argv[1], "debug") == 0 && argc == 7)
        return debug(argv + 1);
    fprintf(stderr, "usage: %s train CKPT DATA B T STEPS LR BETA2 CLIP\n"
                    "       %s debug CKPT DATA B T OUT\n", argv[0], argv[0]);
    return 2;
}
