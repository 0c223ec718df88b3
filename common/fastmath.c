/*
 * fastmath.c - the tables of fastmath.h, filled when the library loads.
 */
#include "fastmath.h"

double kvs_ln_inv_c[KVS_LN_N], kvs_ln_neg_log_inv[KVS_LN_N];
double kvs_exp2_frac[KVS_EXP_N];
double kvs_cos_poly[9], kvs_sin_poly[9];
bool kvs_fastmath_ready;

__attribute__((constructor)) static void fastmath_init(void)
{
	for (int j = 0; j < KVS_LN_N; j++) {
		double c = 1.0 + ((double)j + 0.5) / KVS_LN_N;
		kvs_ln_inv_c[j] = 1.0 / c;
		kvs_ln_neg_log_inv[j] = -log(kvs_ln_inv_c[j]);
	}
	for (int j = 0; j < KVS_EXP_N; j++)
		kvs_exp2_frac[j] = exp2((double)j / KVS_EXP_N);
	/* (pi/2)^n / n!, alternating in sign within each series, summed in
	 * long double and rounded once */
	long double a = 1.57079632679489661923132169163975144L, term = 1.0L;
	for (int n = 0; n < 18; n++) {
		if (n > 0)
			term *= a / (long double)n;
		long double v = (n / 2) % 2 ? -term : term;
		if (n % 2 == 0)
			kvs_cos_poly[n / 2] = (double)v;
		else
			kvs_sin_poly[n / 2] = (double)v;
	}
	kvs_fastmath_ready = true;
}

double kvs_fastmath_ln(double v)
{
	return kvs_fast_ln(v);
}

double kvs_fastmath_exp(double t)
{
	return kvs_fast_exp(t);
}

double kvs_fastmath_cos_2pi(double u)
{
	return kvs_cos_2pi(u);
}
