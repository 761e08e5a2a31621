/* mock_optim.h: the optimiser API of runtime/rt_optim.c (cellrt.h, section
 * "optimisers", written in parallel on another branch) as far as the
 * training program uses it, for building tests/train against a libcellrt
 * that does not have it yet (the test picks this only when libcellrt lacks
 * rt_optim_update).  Included with `cc -include` after cellrt.h would be. */
#ifndef MOCK_OPTIM_H
#define MOCK_OPTIM_H

#include <stdint.h>

typedef enum rt_optim_kind {
	RT_OPT_SGD, RT_OPT_RMSPROP, RT_OPT_ADAM, RT_OPT_ADAGRAD, RT_OPT_CM, RT_OPT_NAG, RT_OPT_COUNT
} rt_optim_kind;

typedef struct rt_optim {
	int kind;
	double momentum, dampening;
	int nesterov;
	double weight_decay, alpha;
	int centered;
	double beta1, beta2;
	int amsgrad;
	double eps, lr_decay, initial_accumulator_value;
	int schedule;
	double mu_max, final_mu;
	int64_t final_low_steps, total_steps, step;
} rt_optim;

void rt_optim_defaults(rt_optim *o, int kind);
const char *rt_optim_invalid(const rt_optim *o);
int rt_optim_slots(const rt_optim *o);
const char *rt_optim_slot_name(const rt_optim *o, int k);
void rt_optim_init_state(const rt_optim *o, float *state, int64_t n);
void rt_optim_begin_step(rt_optim *o);
int rt_optim_update(const rt_optim *o, double lr, float *p, const float *g, float *state, int64_t n);
void rt_optim_params(const rt_optim *o, float *out, const float *p, const float *state, int64_t n);
float rt_clip_grad_norm(int n, float *const *g, const int64_t *numel, float max_norm);

#endif
