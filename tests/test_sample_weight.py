"""Instance weights (the Python API's sample_weight): row i's cost is C·w_{y_i}·sample_weight[i]
in every solver. Oracles: LIBLINEAR on the data with rows repeated (an integer weight k is k
copies of the row in the primal), a row weight equal to a class weight on that class's rows
(the same products, bit for bit), and a generic solver of the weighted refit problem."""
import numpy as np
import pytest
import scipy.sparse as sp

from budgetsvm.estimators import BudgetSVC, LinearSVC, WWLinearSVC
from budgetsvm.labels import group_classes
from budgetsvm.params import TrainParams
from budgetsvm.problem import class_weights
from budgetsvm.train import train
from reference.data import gaussian_classes
from reference.objectives import linear_primal, rel, ww_primal_dual
from reference.peers import seed_liblinear
from test_refit import heart_scale, independent_refit

liblinearutil = pytest.importorskip("liblinear.liblinearutil")

SOLVERS = {
    "dcd": dict(solver="dcd", C=2.0, eps=1e-4),
    "acf": dict(solver="acf", C=2.0, eps=1e-4),
    "ww": dict(solver="ww", C=2.0, eps=1e-6),
    "bsgd": dict(solver="bsgd", C=2.0, gamma=0.1, budget=25, epochs=2, seed=3),
    "bsca": dict(solver="bsca", C=2.0, gamma=0.1, budget=25, epochs=2, seed=3),
}


def _arrays(model):
    parts = [model.coef, getattr(model, "bias_coef", np.zeros(0)), getattr(model, "rho", [])]
    if hasattr(model, "sv"):
        parts.append(model.sv.toarray())
    return [np.asarray(p, dtype=np.float64) for p in parts]


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_row_weights_of_a_class_are_that_class_weight_bit_for_bit(solver):
    # weight 1.5 on every row of class -1 multiplies the same costs as -w-1 1.5: C·1·1.5 and
    # C·1.5 are the same double, so the solver takes the same steps and the model is the same
    X, y = heart_scale()
    weighted = train(X, y, TrainParams(**SOLVERS[solver]),
                     sample_weight=np.where(y == -1, 1.5, 1.0))
    by_class = train(X, y, TrainParams(**SOLVERS[solver], class_weights={-1.0: 1.5}))
    plain = train(X, y, TrainParams(**SOLVERS[solver]))
    for a, b in zip(_arrays(weighted), _arrays(by_class)):
        assert a.tobytes() == b.tobytes()
    assert any(a.shape != b.shape or not np.array_equal(a, b)
               for a, b in zip(_arrays(weighted), _arrays(plain)))


def _repeated(X, y, counts):
    rows = np.repeat(np.arange(len(y)), counts)
    return X[rows], y[rows]


@pytest.mark.parametrize("solver", ["dcd", "acf"])
def test_integer_weights_solve_liblinears_problem_on_repeated_rows(solver):
    # the primal with weights k_i is the primal of the data with row i repeated k_i times:
    # LIBLINEAR -s 3 on the repeated rows reaches the same optimal value
    X, y = heart_scale()
    counts = np.random.default_rng(5).integers(1, 4, size=len(y))
    C = 0.5
    model = train(X, y, TrainParams(solver=solver, C=C, eps=1e-5, max_iter=0),
                  sample_weight=counts)
    w = model.coef[0] * (1.0 if model.labels[0] == 1.0 else -1.0)
    ours = linear_primal(X, np.where(y == 1.0, 1.0, -1.0), C * counts, w)
    Xr, yr = _repeated(X, y, counts)
    seed_liblinear()       # unseeded, it stopped at its iteration cap in some test orders
    theirs_model = liblinearutil.train(yr, Xr, f"-s 3 -c {C} -e 1e-5 -q")
    w_ll = np.array(theirs_model.get_decfun()[0]) * (1.0 if theirs_model.get_labels()[0] == 1
                                                      else -1.0)
    theirs = linear_primal(Xr, np.where(yr == 1.0, 1.0, -1.0), np.full(len(yr), C), w_ll)
    assert rel(ours, theirs) < 1e-4


def test_integer_weights_in_ww_solve_the_problem_of_repeated_rows():
    rng = np.random.default_rng(11)
    X, y_idx = gaussian_classes(rng, 90, 2.0 * rng.standard_normal((3, 4)), every_class_first=True)
    X = sp.csr_matrix(X)
    y = (y_idx + 1).astype(float)
    counts = rng.integers(1, 4, size=len(y))
    C = 0.7
    params = TrainParams(solver="ww", C=C, eps=1e-8)
    weighted = train(X, y, params, sample_weight=counts)
    Xr, yr = _repeated(X, y, counts)
    repeated = train(Xr, yr, params)

    def primal(model, X, y, cost):
        _, y_index = group_classes(y)
        return ww_primal_dual(X, y_index, model.coef.T, np.zeros(1), cost)[0]
    assert rel(primal(weighted, X, y, C * counts),
               primal(repeated, Xr, yr, np.full(len(yr), C))) < 1e-6
    np.testing.assert_allclose(weighted.decision_function(X), repeated.decision_function(X),
                               atol=1e-3)


@pytest.mark.parametrize("solver", ["bsgd", "bsca"])
def test_the_refit_of_a_weighted_budgeted_model_is_the_weighted_reduced_problem(solver):
    # the refit on the model's own support vectors with costs C·w_{y_i}·sample_weight[i],
    # solved again by a generic method
    X, y = heart_scale()
    labels, y_index = group_classes(y)
    sample_weight = np.random.default_rng(2).uniform(0.2, 3.0, size=len(y))
    params = TrainParams(**SOLVERS[solver])
    model = train(X, y, params, sample_weight=sample_weight)
    cost = params.C * class_weights(labels, params)[y_index] * sample_weight
    expected = independent_refit(model, X, y_index, cost, 0, np.arange(model.n_sv))
    np.testing.assert_allclose(model.decision_function(X)[:, 0], expected, atol=1e-4)


@pytest.mark.parametrize("make", [lambda: LinearSVC(C=0.5),
                                  lambda: WWLinearSVC(C=0.5, tol=1e-8),
                                  lambda: BudgetSVC(C=0.5, budget=25, solver="bsca")])
def test_estimators_take_instance_weights(make):
    X, y = heart_scale()
    weights = np.random.default_rng(4).uniform(0.5, 2.0, size=len(y))
    est = make().fit(X, y, sample_weight=weights)
    # the model of train() with the same weights (bsvm-train's parameters of the estimator)
    params = est._train_params(X.shape[1])
    params.seed = est._seed()
    direct = train(X, y, params, sample_weight=weights)
    for a, b in zip(_arrays(est.model_), _arrays(direct)):
        assert a.tobytes() == b.tobytes()
    # equal weights are still C times the weight: the same model as C = 1.0
    doubled = make().set_params(C=1.0).fit(X, y)
    equal = make().fit(X, y, sample_weight=np.full(len(y), 2.0))
    np.testing.assert_array_equal(equal.decision_function(X), doubled.decision_function(X))


def test_weights_whose_costs_overflow_are_refused():
    X, y = heart_scale()
    weights = np.ones(len(y))
    weights[7] = 1e308
    with pytest.raises(Exception, match=r"sample_weight\[7\]"):
        train(X, y, TrainParams(solver="dcd", C=10.0), sample_weight=weights)
    with pytest.raises(ValueError, match="non-negative"):
        LinearSVC().fit(X, y, sample_weight=-weights)


@pytest.mark.parametrize("solver", ["dcd", "bsca"])
def test_probability_folds_are_trained_with_their_rows_weights(solver):
    # the internal folds of -b 1 see the weights of their rows: weights that equal a class
    # weight on its class give the class-weighted model's Platt parameters, bit for bit
    from budgetsvm.probability import train_with_probability
    X, y = heart_scale()
    weighted = train_with_probability(X, y, TrainParams(**SOLVERS[solver]),
                                      sample_weight=np.where(y == -1, 1.5, 1.0))
    by_class = train_with_probability(X, y, TrainParams(**SOLVERS[solver],
                                                        class_weights={-1.0: 1.5}))
    plain = train_with_probability(X, y, TrainParams(**SOLVERS[solver]))
    assert weighted.prob_a.tobytes() == by_class.prob_a.tobytes()
    assert weighted.prob_b.tobytes() == by_class.prob_b.tobytes()
    assert weighted.prob_a.tobytes() != plain.prob_a.tobytes()
